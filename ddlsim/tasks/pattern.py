"""`task=pattern`: completion time of a primitive traffic pattern, priced on the fabric itself.

No collective algorithm: every CU sends at once and the fabric prices the whole pattern (its
latency plus the transfer time of its busiest resource), as SiPAC VI-A's primitive collective
communications (Figs. 10 and 11) do. Patterns among `num_ranks` CUs:

- ``one_to_all``: the root sends to every other CU; ``all_to_one``: every other CU sends to the
  root (the root is `root`, or drawn uniformly with the run's `seed` when `root` is -1);
- ``all_to_all``: every CU sends to every other CU.

`size_meanings` reads "message size" two ways: ``per_flow`` (every flow carries it) and
``per_cu`` (each sender's total is split evenly over its flows: one-to-all and all-to-all send
size / (p - 1) per flow). One row per (pattern, meaning, size).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from ddlsim.core import units
from ddlsim.core.errors import ConfigError
from ddlsim.core.registry import TASKS
from ddlsim.report.table import quantity_table
from ddlsim.tasks.base import Components, TaskResult, config_label

PATTERNS = ("one_to_all", "all_to_one", "all_to_all")
MEANINGS = ("per_flow", "per_cu")


@dataclass
class PatternTaskConfig:
    """Patterns x size meanings x sizes on `num_ranks` CUs of the fabric."""

    name: str = "pattern"
    patterns: list[str] = field(default_factory=lambda: list(PATTERNS))
    num_ranks: int = 512
    sizes: list[str] = field(default_factory=lambda: [f"{10 ** e}B" for e in range(2, 10)])
    size_meanings: list[str] = field(default_factory=lambda: list(MEANINGS))
    root: int = -1


@TASKS.register("pattern", PatternTaskConfig)
@dataclass(frozen=True)
class PatternTask:
    """Primitive traffic patterns (one-to-all, all-to-one, all-to-all) priced by the fabric (SiPAC Figs. 10-11)."""

    reads: ClassVar[tuple[str, ...]] = ("fabric",)

    patterns: tuple[str, ...]
    num_ranks: int
    sizes_bytes: tuple[int, ...]
    size_meanings: tuple[str, ...]
    root: int
    name: str = "pattern"

    @classmethod
    def from_config(cls, config: PatternTaskConfig) -> PatternTask:
        for key, values, known in (("patterns", config.patterns, PATTERNS),
                                   ("size_meanings", config.size_meanings, MEANINGS)):
            if not values or any(value not in known for value in values):
                raise ConfigError(key, list(values), f"must list some of {', '.join(known)}")
        if config.num_ranks < 2:
            raise ConfigError("num_ranks", config.num_ranks, "must be >= 2")
        if not -1 <= config.root < config.num_ranks:
            raise ConfigError("root", config.root, f"must be -1 (drawn with the seed) or in [0, {config.num_ranks})")
        return cls(tuple(config.patterns), config.num_ranks,
                   tuple(units.parse_size_bytes(size, "sizes", allow_zero=False) for size in config.sizes),
                   tuple(config.size_meanings), config.root)

    def run(self, components: Components) -> TaskResult:
        import numpy as np

        from ddlsim.core.types import GroupLayout
        from ddlsim.network.patterns import Mesh, Pairs
        from ddlsim.network.placing import place_ranks

        n = self.num_ranks
        seed = int(components.config.get("seed", 0) or 0)
        root = self.root if self.root >= 0 else int(np.random.default_rng(seed).integers(n))
        others = np.array([p for p in range(n) if p != root])
        shapes = {"one_to_all": Pairs(n, np.full(others.size, root), others),
                  "all_to_one": Pairs(n, others, np.full(others.size, root)),
                  "all_to_all": Mesh(n, np.zeros(n, dtype=np.int64))}
        fabric = components.fabric
        layout, placement = GroupLayout(n), place_ranks(fabric, n)
        sizes = np.array(self.sizes_bytes, dtype=float)
        label = config_label(components.config, "fabric")
        rows = []
        for kind in self.patterns:
            cost = fabric.price(shapes[kind], layout, placement)
            for meaning in self.size_meanings:
                per_flow = sizes if meaning == "per_flow" else sizes / (n - 1)
                transfer = fabric.transfer_time_s(per_flow, cost.s_per_unit)
                for size, seconds in zip(self.sizes_bytes, transfer, strict=True):
                    rows.append({"fabric": label, "pattern": kind, "size_meaning": meaning, "size_bytes": size,
                                 "num_ranks": n, "root": root, "latency_s": cost.latency_s,
                                 "transfer_s": float(seconds), "time_s": cost.latency_s + float(seconds)})
        summary = quantity_table([row for row in rows if row["size_meaning"] == self.size_meanings[0]],
                                 {"fabric": None, "pattern": None, "size_bytes": "size_bytes", "time_s": "time_s"},
                                 {"size_bytes": f"size ({self.size_meanings[0].replace('_', ' ')})", "time_s": "JCT"})
        return TaskResult(rows=rows, summary=summary)
