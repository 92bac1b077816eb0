"""`per_op`: a selector that runs a chosen algorithm for each collective op.

Some papers fix the strategy per op rather than per system. TopoOpt Sec. 5.1 runs ring-based
AllReduce and a direct all-to-all on every fabric it compares; `ops` maps an op to an algorithm
config (a name, or a mapping with ``name`` and parameters, e.g. ``{name: best, exclude: [direct]}``)
and `default` covers the ops not listed::

    name: per_op
    ops: {all_reduce: topoopt_ring, reduce_scatter: topoopt_ring, all_gather: topoopt_ring,
          all_to_all: direct}
    default: best

Like `best`, it is not a schedule of its own: the estimator prices the op's algorithm (or, if
that is itself a selector such as `best`, that selector's candidates) and reports the algorithm
that ran.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from ddlsim.core.errors import ConfigError
from ddlsim.core.registry import ALGORITHMS
from ddlsim.core.types import CollectiveOp
from ddlsim.network.collectives.base import CollectiveAlgorithm


@dataclass
class PerOpConfig:
    name: str = "per_op"
    ops: dict[str, Any] = field(default_factory=dict)
    default: Any = "best"


def _build(node: Any, key: str) -> CollectiveAlgorithm:
    if isinstance(node, str):
        node = {"name": node}
    if not isinstance(node, Mapping) or "name" not in node:
        raise ConfigError(key, node, "must be an algorithm name or a mapping with 'name'")
    if node["name"] == "per_op":
        raise ConfigError(key, node["name"], "per_op cannot nest itself")
    return ALGORITHMS.build(dict(node), key=key)


@ALGORITHMS.register("per_op", PerOpConfig)
@dataclass(frozen=True)
class PerOp(CollectiveAlgorithm):
    """A chosen algorithm per collective op (e.g. TopoOpt Sec. 5.1: ring AllReduce, direct all-to-all)."""

    ops: tuple[tuple[CollectiveOp, CollectiveAlgorithm], ...] = ()
    default: CollectiveAlgorithm | None = None
    name: str = "per_op"
    is_selector: ClassVar[bool] = True

    @classmethod
    def from_config(cls, config: PerOpConfig) -> PerOp:
        chosen = []
        for op_name, node in sorted(dict(config.ops).items()):
            op = CollectiveOp.from_config(op_name, f"ops.{op_name}")
            chosen.append((op, _build(node, f"ops.{op_name}")))
        return cls(tuple(chosen), _build(config.default, "default"), config.name)

    def algorithm_for(self, op: CollectiveOp) -> CollectiveAlgorithm:
        for listed, algorithm in self.ops:
            if listed is op:
                return algorithm
        assert self.default is not None
        return self.default

    def candidates(self, op: CollectiveOp | None = None) -> list[CollectiveAlgorithm]:
        """What the estimator prices for `op`: its algorithm, or that selector's own candidates."""
        if op is None:
            raise ConfigError("op", None, "per_op chooses by op; ask for the candidates of one op")
        algorithm = self.algorithm_for(op)
        if getattr(algorithm, "is_selector", False):
            return algorithm.candidates(op)
        return [algorithm]
