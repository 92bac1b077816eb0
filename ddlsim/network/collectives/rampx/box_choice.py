"""`placement=contention_aware`: the RAMP-x box a job runs fastest in, found by pricing each one.

The choice lives with RAMP-x because it prices RAMP-x schedules; the fabric never imports it and
is handed the box (`RampFabric.place_in_box`, called by `ddlsim.network.placing.place_ranks`).

RAMP 7.4 places a job in the box with the fewest RAMP-x steps, which is right under the paper's
ideal switching. Under the transcoder's subnet-wavelength contention the fewest steps can mean one
communication group (x subnets for all the job's traffic): a 1 GB all-reduce on 128 ranks takes
33.6 ms in (1, 2, 64) against 3.2 ms in (2, 1, 64) (docs/ramp.md). So every legal box is priced
for a RAMP-x all-reduce of `PROBE_BYTES` (through the fabric's own pricing, so that
`switching=ideal` chooses by ideal prices) and the fastest is kept; ties go to the fewest steps.
Only the box with the fewest racks is priced for each number of groups (at most six boxes, plus
the fewest-steps box):
node numbers in different racks share a wavelength in every subnet, and in the measurements the
fewest racks was never slower.
"""

from __future__ import annotations

from ddlsim.core.caches import PROCESS_CACHES
from ddlsim.core.types import CollectiveOp, GroupLayout
from ddlsim.network.collectives.base import ScheduleRequest
from ddlsim.network.collectives.rampx.algorithm import RampX
from ddlsim.network.estimate import PRUNE_MARGIN, StepPricer, price_schedule
from ddlsim.network.fabrics.ramp.fabric import RampFabric
from ddlsim.network.fabrics.ramp.placement import active_steps, job_dims, legal_shapes, place_job
from ddlsim.network.placement import Placement
from ddlsim.network.reduction import DEFAULT_DEVICE, resolve_reduction_model

PROBE_BYTES = 10**9
# Above this many ranks pricing every box takes 14-60 s (8,192 and 32,768 ranks), so the box is
# chosen by rule: the most communication groups, then the fewest steps, then the fewest racks. At
# 256-2,048 ranks that rule and the pricing choose the same box (measured, docs/ramp.md).
PRICED_UP_TO = 4096


_BOXES = PROCESS_CACHES.memo("network.ramp_boxes", maxsize=256)


def cheapest_box(fabric: RampFabric, num_ranks: int) -> tuple[int, int, int] | None:
    """The legal (x', J', Lambda') box with the fastest RAMP-x all-reduce, or None if none is legal."""
    return _BOXES.get_or_make((fabric, num_ranks), lambda: _cheapest_box(fabric, num_ranks))


def _cheapest_box(fabric: RampFabric, num_ranks: int) -> tuple[int, int, int] | None:
    dims = fabric.dims
    fewest_racks: dict[int, tuple[int, int, int]] = {}
    for shape in legal_shapes(num_ranks, dims.x, dims.racks, dims.wavelengths):
        fewest_racks.setdefault(shape[0], shape)  # racks ascend: racks share wavelengths, groups do not
    shapes = list(fewest_racks.values())
    fewest_steps = job_dims(num_ranks, dims.x, dims.racks, dims.wavelengths)
    if fewest_steps is not None and fewest_steps not in shapes:
        shapes.append(fewest_steps)  # never worse than RAMP 7.4's choice
    if len(shapes) <= 1:
        return shapes[0] if shapes else None
    if num_ranks > PRICED_UP_TO:
        return min(shapes, key=_rule_order)
    # What `CollectiveEstimator(fabric, RampX())` would do (the estimator places jobs through this module).
    algorithm, pricer, model = RampX(), StepPricer(fabric), resolve_reduction_model(DEFAULT_DEVICE)
    layout = GroupLayout(num_ranks, 1, num_ranks)
    best: tuple[float, int, tuple[int, int, int]] | None = None
    # The box the rule would take first (likely the fastest); a box is given up as soon as its
    # partial price exceeds the best so far (it could not win): the same choice as pricing every box.
    for shape in sorted(shapes, key=_rule_order):
        nodes = place_job(num_ranks, dims, "contention_aware", shape)
        placement = Placement(num_ranks, nodes, key=("ramp_box", num_ranks, shape))
        request = ScheduleRequest(CollectiveOp.ALL_REDUCE, num_ranks, 0, PROBE_BYTES, fabric, layout, placement)
        schedule = fabric.prepare(algorithm.compact(request), layout, placement)
        limit_s = None if best is None else best[0] * (1 + PRUNE_MARGIN)
        result = price_schedule(pricer, schedule, layout, placement, PROBE_BYTES, model, give_up_above_s=limit_s)
        if result is not None:
            entry = (result.time_s, active_steps(*shape), shape)
            best = entry if best is None or entry < best else best
    assert best is not None
    return best[2]


def _rule_order(shape: tuple[int, int, int]) -> tuple[int, int, int]:
    """The rule's preference: the most communication groups, then the fewest steps, then the fewest racks."""
    return (-shape[0], active_steps(*shape), shape[1])
