"""RAMP-x (RAMP Sections 5-6) as registered collective algorithms: `rampx` and `rampx_ring`.

Every op is built from the steps of a `RampXPlan` (Table 8; Rabenseifner-style composites):

- reduce_scatter: steps 1..4, Reshape + Reduce; all_gather: steps 4..1, Copy;
- all_reduce: reduce-scatter then all-gather (up to 8 steps); reduce: reduce-scatter then a
  gather to the root; scatter / gather: trees over the steps (Reshape / Copy);
- all_to_all: steps 1..4 with Reshape on both sides; barrier: empty tokens, AND;
- broadcast: the pipelined multicast tree with k stages of Eq. 1.

`rampx` uses step-4 formulation 2 (direct exchange among device groups), `rampx_ring`
formulation 1 (one-to-one ring over device groups, every transceiver group). Both run only
on the `ramp` fabric, for group sizes that form an equivalent RAMP (see
`fabrics.ramp.placement`); `best` compares them with ring and recursive halving/doubling.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass
from typing import ClassVar

from ddlsim.core.registry import ALGORITHMS
from ddlsim.core.types import CollectiveOp
from ddlsim.network.collectives.base import ALL_OPS, CollectiveAlgorithm, ScheduleRequest
from ddlsim.network.collectives.builder import ScheduleBuilder
from ddlsim.network.collectives.rampx import alltoall, broadcast, phases
from ddlsim.network.collectives.rampx.layout import RampXLayout, group_shape
from ddlsim.network.fabrics.base import Fabric
from ddlsim.network.fabrics.ramp.fabric import RampConfig, RampFabric
from ddlsim.network.fabrics.ramp.placement import rampx_unsupported_reason
from ddlsim.network.schedule import ExplicitSchedule, Schedule

Op = CollectiveOp


@dataclass
class RampXConfig:
    name: str = "rampx"
    formulation: int = 2


@dataclass
class RampXRingConfig:
    name: str = "rampx_ring"
    formulation: int = 1


def build_rampx(builder: ScheduleBuilder, lay: RampXLayout, stages: int) -> None:
    op, root = builder.request.op, builder.request.root
    steps = lay.steps
    if op in (Op.REDUCE_SCATTER, Op.ALL_REDUCE, Op.REDUCE):
        for step in steps:
            phases.reduce_scatter(builder, lay, step)
    if op in (Op.ALL_GATHER, Op.ALL_REDUCE):
        for step in reversed(steps):
            phases.all_gather(builder, lay, step)
    if op in (Op.GATHER, Op.REDUCE, Op.SCATTER):
        levels = phases.tree_levels(lay, root)
        order = steps if op is Op.SCATTER else tuple(reversed(steps))
        for step in order:
            (phases.scatter if op is Op.SCATTER else phases.gather)(builder, lay, step, levels[step])
    if op is Op.ALL_TO_ALL:
        alltoall.all_to_all(builder, lay)
    if op is Op.BARRIER:
        for step in steps:
            phases.barrier(builder, lay, step)
    if op is Op.BROADCAST:
        broadcast.broadcast(builder, lay, stages)


class RampXBase(CollectiveAlgorithm):
    ops = ALL_OPS
    size_dependent: ClassVar[bool] = True  # the broadcast's pipeline depth depends on the size
    formulation: int

    def supports(self, fabric: Fabric, op: CollectiveOp, group_size: int) -> str | None:
        reason = super().supports(fabric, op, group_size)
        if reason is not None:
            return reason
        if not isinstance(fabric, RampFabric):
            return "RAMP-x runs only on the ramp fabric"
        return rampx_unsupported_reason(group_size, fabric.dims)

    def _layout(self, request: ScheduleRequest) -> RampXLayout:
        return RampXLayout.for_request(request, self.formulation)

    def stages(self, request: ScheduleRequest, lay: RampXLayout) -> int:
        if request.op is not Op.BROADCAST:
            return 1
        alpha_s, s_per_byte = request.fabric.nominal_alpha_beta()
        levels = broadcast.levels_of(lay, request.root)
        return broadcast.pipeline_stages(request.size_bytes, levels, alpha_s, s_per_byte)

    def schedule_key(self, request: ScheduleRequest) -> Hashable:
        found = group_shape(request)
        return None if found is None else (found[0], found[1].tobytes())

    def _build(self, request: ScheduleRequest, explicit: bool) -> ScheduleBuilder:
        lay = self._layout(request)
        stages = self.stages(request, lay)
        op = request.op
        chunks = stages if op is Op.BROADCAST else 1 if op is Op.BARRIER else request.group_size
        slots = alltoall.BANKS * chunks if op is Op.ALL_TO_ALL else chunks
        builder = ScheduleBuilder(request, self.name, chunks, explicit=explicit, num_slots=slots)
        build_rampx(builder, lay, stages)
        return builder

    def build_compact(self, request: ScheduleRequest) -> Schedule:
        return self._build(request, explicit=False).schedule()

    def build_explicit(self, request: ScheduleRequest) -> ExplicitSchedule:
        return self._build(request, explicit=True).explicit_schedule()

    def verification_fabric(self, group_size: int) -> Fabric:
        """The 54-node RAMP of Fig. 8 for 54 ranks (x = J = 3, Lambda = 6: all four steps), else the
        maximum RAMP, on which the placement picks the shape with the fewest steps."""
        if group_size == 54:
            return RampFabric.from_config(RampConfig(x=3, racks=3, wavelengths=6))
        return RampFabric.from_config(RampConfig())

    def verification_sizes(self) -> tuple[int, ...]:
        return (*range(2, 65), 54, 96, 128, 200, 256)


@ALGORITHMS.register("rampx", RampXConfig, summary="RAMP-x (formulation 2): <= 4 steps per phase on RAMP")
@dataclass(frozen=True)
class RampX(RampXBase):
    """RAMP-x collectives, step-4 formulation 2 (direct exchange among device groups)."""

    formulation: int = 2
    name: str = "rampx"

    @classmethod
    def from_config(cls, config: RampXConfig) -> RampX:
        from ddlsim.network.collectives.rampx.subgroups import check_formulation

        return cls(check_formulation(config.formulation), config.name)


@ALGORITHMS.register("rampx_ring", RampXRingConfig,
                     summary="RAMP-x (formulation 1): one-to-one ring in step 4, all transceivers")
@dataclass(frozen=True)
class RampXRing(RampXBase):
    """RAMP-x collectives, step-4 formulation 1 (ring over device groups with every transceiver)."""

    formulation: int = 1
    name: str = "rampx_ring"

    @classmethod
    def from_config(cls, config: RampXRingConfig) -> RampXRing:
        from ddlsim.network.collectives.rampx.subgroups import check_formulation

        return cls(check_formulation(config.formulation), config.name)
