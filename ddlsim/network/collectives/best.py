"""`best`: not a schedule of its own, but the fastest registered algorithm for each call.

The estimator tries every registered algorithm (built with its default parameters) that
supports the fabric, op and group size, and keeps the fastest; ties go to the first name in
alphabetical order, so the choice is deterministic. `exclude` removes names from the contest;
`include`, when not empty, limits it to those names (a paper's strategy set, e.g. the ring-based
strategies of RAMP 7.6: ``{name: best, include: [ring, hierarchical, torus2d]}``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from ddlsim.core.caches import PROCESS_CACHES
from ddlsim.core.errors import ConfigError
from ddlsim.core.registry import ALGORITHMS
from ddlsim.core.types import CollectiveOp
from ddlsim.network.collectives.base import CollectiveAlgorithm


@dataclass
class BestConfig:
    name: str = "best"
    exclude: list[str] = field(default_factory=list)
    include: list[str] = field(default_factory=list)


@ALGORITHMS.register("best", BestConfig)
@dataclass(frozen=True)
class Best(CollectiveAlgorithm):
    """The fastest registered algorithm that supports the fabric, op and group size."""

    exclude: tuple[str, ...] = ()
    name: str = "best"
    include: tuple[str, ...] = ()
    is_selector: ClassVar[bool] = True

    @classmethod
    def from_config(cls, config: BestConfig) -> Best:
        for key in ("exclude", "include"):
            unknown = [name for name in getattr(config, key) if name not in ALGORITHMS]
            if unknown:
                raise ConfigError(key, unknown, f"unknown algorithms; choose from {', '.join(ALGORITHMS.names())}")
        return cls(tuple(sorted(config.exclude)), config.name, tuple(sorted(config.include)))

    def candidates(self, op: CollectiveOp | None = None) -> list[CollectiveAlgorithm]:
        """Every registered algorithm with its default parameters (built once per registry state);
        the same for every `op` (each candidate says itself which ops it supports)."""
        names = tuple(name for name in ALGORITHMS.names()
                      if name not in self.exclude and (not self.include or name in self.include))
        return _CANDIDATES.get_or_make(names, lambda: _default_algorithms(names))


def _default_algorithms(names: tuple[str, ...]) -> list[CollectiveAlgorithm]:
    """Each named algorithm built from its schema's defaults (valid by construction, so the
    config validation of `ALGORITHMS.make` is skipped: it costs about 10 ms per algorithm)."""
    built = [ALGORITHMS.entry(name).build(ALGORITHMS.entry(name).schema(name=name)) for name in names]
    return [algorithm for algorithm in built if not getattr(algorithm, "is_selector", False)]


_CANDIDATES = PROCESS_CACHES.memo("network.best_candidates")
