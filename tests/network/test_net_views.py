"""Two views, one truth: every registered algorithm's compact schedule unrolls to its explicit
schedule step by step, and both give the same price on every electrical fabric, for group
sizes up to 1,024 and for strided layouts (concurrent groups sharing links)."""

from __future__ import annotations

import pytest

from ddlsim.app.catalog import load_all
from ddlsim.core.registry import ALGORITHMS, FABRICS
from ddlsim.core.types import CollectiveOp, GroupLayout
from ddlsim.network.collectives.base import ScheduleRequest
from ddlsim.network.estimate import StepPricer, price_explicit, price_schedule
from ddlsim.network.fabrics.base import Fabric
from ddlsim.network.placing import place_ranks
from ddlsim.network.reduction import ReductionModel
from ddlsim.network.verify import compare_views, fabric_for

load_all()
MODEL = ReductionModel.from_datasheet("a100_80gb")
ALGORITHM_NAMES = [entry.name for entry in ALGORITHMS if not getattr(ALGORITHMS.make(entry.name), "is_selector", False)]
FABRIC_BUILDERS = {
    "ideal": lambda: FABRICS.make("ideal", num_nodes=4096),
    "superpod": lambda: FABRICS.make("superpod", num_nodes=4096),
    "superpod_oversubscribed": lambda: FABRICS.make("superpod", num_nodes=4096, oversubscription=[3.0, 2.0]),
    "torus2d": lambda: FABRICS.make("torus2d", dims=[16, 64]),
    "leaf_spine": lambda: FABRICS.make("leaf_spine", num_nodes=1024, tier_sizes=[1024]),
}
# (group size, stride): single groups of many sizes, and strided layouts (all groups at once).
LAYOUTS = [(2, 1), (3, 1), (7, 1), (8, 4), (12, 2), (16, 1), (24, 8), (33, 1), (64, 2), (100, 1)]


def _check(fabric: Fabric, algorithm, op: CollectiveOp, size: int, stride: int, root: int, size_bytes: int) -> None:
    layout = GroupLayout(size, stride, size * stride)
    placement = place_ranks(fabric, layout.job_ranks)
    request = ScheduleRequest(op, size, root, size_bytes, fabric, layout, placement)
    compact, explicit = algorithm.compact(request), algorithm.explicit(request)
    compare_views(compact, explicit)
    ours = price_schedule(StepPricer(fabric), compact, layout, placement, size_bytes, MODEL)
    theirs = price_explicit(fabric, explicit, layout, placement, size_bytes, MODEL)
    assert ours.num_steps == theirs.num_steps == compact.num_steps
    for part in ("latency_s", "transfer_s", "compute_s"):
        assert getattr(ours, part) == pytest.approx(getattr(theirs, part), rel=1e-9, abs=1e-18), part


@pytest.mark.parametrize("fabric_name", list(FABRIC_BUILDERS))
@pytest.mark.parametrize("name", ALGORITHM_NAMES)
def test_compact_and_explicit_views_agree(name, fabric_name):
    algorithm = ALGORITHMS.make(name)
    fabric = FABRIC_BUILDERS[fabric_name]()
    checked = 0
    for op in sorted(algorithm.ops):
        for size, stride in LAYOUTS:
            if size * stride > fabric.num_nodes or algorithm.supports(fabric, op, size) is not None:
                continue
            size_bytes = 0 if op is CollectiveOp.BARRIER else 3_000_000 + size
            _check(fabric, algorithm, op, size, stride, size - 1 if size % 3 == 0 else 0, size_bytes)
            checked += 1
    if checked == 0:
        pytest.skip(f"{name} runs on none of these fabrics' layouts (co-designed for another fabric)")


@pytest.mark.parametrize("name", ALGORITHM_NAMES)
def test_views_agree_on_the_algorithms_own_fabric(name):
    algorithm = ALGORITHMS.make(name)
    for op in sorted(algorithm.ops):
        for size in (4, 9, 16, 27):
            fabric = fabric_for(algorithm, op, size)
            if fabric is not None:
                _check(fabric, algorithm, op, size, 1, 0, 0 if op is CollectiveOp.BARRIER else 1_000_000)


@pytest.mark.parametrize("name", ["ring", "rhd", "hierarchical", "binary_tree", "bruck", "direct"])
def test_views_agree_at_1024_ranks(name):
    algorithm = ALGORITHMS.make(name)
    fabric = FABRICS.make("superpod", num_nodes=1024)
    op = CollectiveOp.ALL_REDUCE if CollectiveOp.ALL_REDUCE in algorithm.ops else CollectiveOp.ALL_GATHER
    _check(fabric, algorithm, op, 1024, 1, 0, 10**9)
