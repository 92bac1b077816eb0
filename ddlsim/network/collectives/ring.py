"""Ring algorithms over one or more dimensions: ring, 2D torus and hierarchical ring.

All three run every op with the ring phases of `ring_phases.py`, one dimension at a time:

- all_reduce: reduce-scatter along dims 0..D-1, then all-gather along D-1..0;
- reduce_scatter / all_gather: the first / second half of that;
- reduce: reduce-scatter, then pipelined gather to the root along D-1..0;
- broadcast: pipelined scatter from the root along 0..D-1, then all-gather;
- gather / scatter: the pipelined gather / scatter alone;
- all_to_all: store-and-forward relay along each dimension;
- barrier: an all-gather of empty tokens.

They differ in the dimensions. `ring`: one ring of n (2(n-1) steps for all_reduce). `torus2d`
(Mikami et al. 2018, RAMP [47]): two dims (x, n/x), x from `dim_x`, else the torus fabric's rows,
else the divisor of n nearest sqrt(n). `hierarchical` (Ueno and Yokota 2019, RAMP [77]): one
dimension per level of the fabric (GPUs in a node, nodes in a leaf, ...), so that the
largest transfers stay in the fastest domain: intra-node, then inter-node, then intra-node.
Every group size is handled.
"""

from __future__ import annotations

import math
from collections.abc import Hashable
from dataclasses import dataclass, field

from ddlsim.core.registry import ALGORITHMS
from ddlsim.core.types import CollectiveOp
from ddlsim.network.collectives import ring_phases as phases
from ddlsim.network.collectives.base import ALL_OPS, CollectiveAlgorithm, ScheduleRequest
from ddlsim.network.collectives.builder import Radix, ScheduleBuilder
from ddlsim.network.fabrics.base import Fabric
from ddlsim.network.schedule import ExplicitSchedule, Schedule

Op = CollectiveOp


def build_dimensional(builder: ScheduleBuilder, dims: tuple[int, ...]) -> None:
    radix = Radix(dims)
    op, root, count = builder.request.op, builder.request.root, len(dims)
    if op in (Op.ALL_REDUCE, Op.REDUCE_SCATTER, Op.REDUCE):
        for d in range(count):
            phases.reduce_scatter(builder, radix, d, tuple(range(d)))
    if op in (Op.BROADCAST, Op.SCATTER):
        for d in range(count):
            phases.scatter(builder, radix, d, root)
    if op in (Op.ALL_REDUCE, Op.ALL_GATHER, Op.BROADCAST, Op.BARRIER):
        for d in reversed(range(count)):
            phases.all_gather(builder, radix, d, tuple(range(d)))
    if op in (Op.REDUCE, Op.GATHER):
        for d in reversed(range(count)):
            phases.gather(builder, radix, d, root)
    if op is Op.ALL_TO_ALL:
        for d in range(count):
            phases.relay_all_to_all(builder, radix, d)


class DimensionalRing(CollectiveAlgorithm):
    """Shared machinery; subclasses choose the dimensions."""

    ops = ALL_OPS

    def dims(self, request: ScheduleRequest) -> tuple[int, ...]:
        raise NotImplementedError

    def _dims(self, request: ScheduleRequest) -> tuple[int, ...]:
        return tuple(k for k in self.dims(request) if k > 1)

    def schedule_key(self, request: ScheduleRequest) -> Hashable:
        return self._dims(request)

    def build_compact(self, request: ScheduleRequest) -> Schedule:
        builder = ScheduleBuilder(request, self.name, request.group_size, explicit=False)
        build_dimensional(builder, self._dims(request))
        return builder.schedule()

    def build_explicit(self, request: ScheduleRequest) -> ExplicitSchedule:
        builder = ScheduleBuilder(request, self.name, request.group_size, explicit=True)
        build_dimensional(builder, self._dims(request))
        return builder.explicit_schedule()


@dataclass
class RingConfig:
    name: str = "ring"


@ALGORITHMS.register("ring", RingConfig)
@dataclass(frozen=True)
class Ring(DimensionalRing):
    """One ring over the whole group: 2(n-1) steps of size/n for an all-reduce."""

    name: str = "ring"

    @classmethod
    def from_config(cls, config: RingConfig) -> Ring:
        return cls(config.name)

    def dims(self, request: ScheduleRequest) -> tuple[int, ...]:
        return (request.group_size,)


@dataclass
class Torus2DConfig:
    name: str = "torus2d"
    dim_x: int = 0


def nearest_square_divisor(n: int) -> int:
    x = math.isqrt(n)
    while n % x:
        x -= 1
    return x


@ALGORITHMS.register("torus2d", Torus2DConfig)
@dataclass(frozen=True)
class Torus2DRing(DimensionalRing):
    """2D-torus rings: reduce-scatter along x, all-reduce along y, all-gather along x."""

    dim_x: int = 0
    name: str = "torus2d"

    @classmethod
    def from_config(cls, config: Torus2DConfig) -> Torus2DRing:
        from ddlsim.core.errors import ConfigError

        if config.dim_x < 0:
            raise ConfigError("dim_x", config.dim_x, "must be >= 0 (0 chooses automatically)")
        return cls(config.dim_x, config.name)

    def supports(self, fabric: Fabric, op: CollectiveOp, group_size: int) -> str | None:
        reason = super().supports(fabric, op, group_size)
        if reason is None and self.dim_x and group_size % self.dim_x:
            return f"dim_x = {self.dim_x} does not divide the group size {group_size}"
        return reason

    def dims(self, request: ScheduleRequest) -> tuple[int, ...]:
        n = request.group_size
        if self.dim_x:
            return self.dim_x, n // self.dim_x
        hierarchy = request.hierarchy
        if request.fabric.grid_dims() and len(hierarchy) == 2:
            return hierarchy
        x = nearest_square_divisor(n)
        return x, n // x


@dataclass
class HierarchicalConfig:
    name: str = "hierarchical"
    dims: list[int] = field(default_factory=list)


@ALGORITHMS.register("hierarchical", HierarchicalConfig)
@dataclass(frozen=True)
class HierarchicalRing(DimensionalRing):
    """Rings per fabric level: intra-node, then inter-node (then further tiers), then back."""

    dims_override: tuple[int, ...] = ()
    name: str = "hierarchical"

    @classmethod
    def from_config(cls, config: HierarchicalConfig) -> HierarchicalRing:
        from ddlsim.core.errors import ConfigError

        if any(k < 1 for k in config.dims):
            raise ConfigError("dims", list(config.dims), "every dimension must be >= 1")
        return cls(tuple(int(k) for k in config.dims), config.name)

    def supports(self, fabric: Fabric, op: CollectiveOp, group_size: int) -> str | None:
        reason = super().supports(fabric, op, group_size)
        if reason is None and self.dims_override and math.prod(self.dims_override) != group_size:
            return f"dims {list(self.dims_override)} multiply to {math.prod(self.dims_override)}, not {group_size}"
        return reason

    def dims(self, request: ScheduleRequest) -> tuple[int, ...]:
        return self.dims_override or request.hierarchy
