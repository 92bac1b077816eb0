"""`fastest_plan` settles on the plan `RampFabric.step_plan` took from planning every rule in full:
the first rule with the smallest slowdown, on random steps (one-to-one, fan-in, fan-out, dense),
RAMP-x steps, every subnet kind and both transceiver policies."""

from __future__ import annotations

import numpy as np
import pytest

from ddlsim.network import CollectiveEstimator, make_fabric
from ddlsim.network.fabrics.ramp import transcoder
from ddlsim.network.fabrics.ramp.plan_choice import fastest_plan
from ddlsim.network.fabrics.ramp.topology import RampDims

RULES = (*transcoder.BASE_RULES, *transcoder.NUMBERED_RULES)


def _plan_of(dims, src, dst, members, rules, use_all, kind):
    """The plan of every rule planned in full, the first with the smallest slowdown (as step_plan chose)."""
    best = None
    for plan in transcoder.plan_step_rules(dims, src, dst, members=members, rules=rules, use_all=use_all, kind=kind):
        if best is None or plan.slowdown < best.slowdown:
            best = plan
    return best


def _random_steps(dims: RampDims, rng: np.random.Generator, count: int):
    n = dims.num_nodes
    for _ in range(count):
        kind = rng.integers(4)
        size = int(rng.integers(2, n + 1))
        nodes = rng.permutation(n)[:size]
        if kind == 0:  # a permutation
            src, dst = nodes, np.roll(nodes, int(rng.integers(1, size)) if size > 1 else 0)
        elif kind == 1:  # fan-in to a few receivers
            src, dst = nodes, rng.choice(nodes[: max(1, size // 4)], size)
        elif kind == 2:  # fan-out from a few senders
            src, dst = rng.choice(nodes[: max(1, size // 4)], size), nodes
        else:  # random pairs
            src, dst = rng.choice(nodes, 2 * size), rng.choice(nodes, 2 * size)
        keep = src != dst
        if keep.any():
            yield src[keep].astype(np.int64), dst[keep].astype(np.int64)


@pytest.mark.parametrize("kind", transcoder.SUBNET_KINDS)
@pytest.mark.parametrize("shape", [(4, 4, 8), (3, 2, 6), (4, 2, 4), (8, 2, 4)])
def test_fastest_plan_equals_the_best_of_every_rule(kind, shape):
    dims = RampDims(*shape)
    rng = np.random.default_rng(sum(shape) + len(kind))
    checked = 0
    for src, dst in _random_steps(dims, rng, 60):
        peers = int(np.bincount(src).max())
        for use_all in (False, True):
            quick = fastest_plan(dims, src, dst, members=peers + 1, rules=RULES, use_all=use_all, kind=kind)
            full = _plan_of(dims, src, dst, peers + 1, RULES, use_all, kind)
            assert (quick.per_pair, quick.rounds) == (full.per_pair, full.rounds)
            checked += 1
    assert checked >= 100


@pytest.mark.parametrize("algorithm", ["ring", "rhd", "binomial_tree", "hierarchical", "rampx"])
def test_ramp_estimates_equal_planning_every_rule(algorithm, monkeypatch):
    import ddlsim.network.fabrics.ramp.fabric as ramp_fabric

    fabric = make_fabric("ramp", x=4, racks=4, wavelengths=8)
    for ranks in (16, 64, 128):
        quick = CollectiveEstimator(fabric, algorithm).estimate("all_reduce", 10**8, num_ranks=ranks)
        ramp_fabric._PLANS.clear()
        ramp_fabric._PRICES.clear()
        with monkeypatch.context() as patch:
            patch.setattr(ramp_fabric, "fastest_plan", lambda dims, src, dst, *, members, rules, use_all, kind:
                          _plan_of(dims, src, dst, members, rules, use_all, kind))
            full = CollectiveEstimator(fabric, algorithm).estimate("all_reduce", 10**8, num_ranks=ranks)
        ramp_fabric._PLANS.clear()
        ramp_fabric._PRICES.clear()
        assert quick == full, ranks



def _every_box(fabric, num_ranks: int):
    """The contention-aware box chosen by pricing every candidate box in full (no giving up)."""
    from ddlsim.core.types import CollectiveOp, GroupLayout
    from ddlsim.network.collectives.base import ScheduleRequest
    from ddlsim.network.collectives.rampx.algorithm import RampX
    from ddlsim.network.fabrics.ramp.placement import active_steps, job_dims, legal_shapes, place_job
    from ddlsim.network.placement import Placement

    dims = fabric.dims
    fewest_racks = {}
    for shape in legal_shapes(num_ranks, dims.x, dims.racks, dims.wavelengths):
        fewest_racks.setdefault(shape[0], shape)
    shapes = list(fewest_racks.values())
    fewest_steps = job_dims(num_ranks, dims.x, dims.racks, dims.wavelengths)
    if fewest_steps is not None and fewest_steps not in shapes:
        shapes.append(fewest_steps)
    if len(shapes) <= 1:
        return shapes[0] if shapes else None
    estimator = CollectiveEstimator(fabric, RampX())
    layout = GroupLayout(num_ranks, 1, num_ranks)
    priced = []
    for shape in shapes:
        placement = Placement(num_ranks, place_job(num_ranks, dims, "contention_aware", shape), key=("full", shape))
        request = ScheduleRequest(CollectiveOp.ALL_REDUCE, num_ranks, 0, 10**9, fabric, layout, placement)
        priced.append((estimator.breakdown(estimator.algorithm, request).time_s, active_steps(*shape), shape))
    return min(priced)[2]


@pytest.mark.parametrize("config", [{}, {"subnet": "route_switch"}, {"x": 8, "racks": 4, "wavelengths": 16},
                                    {"x": 4, "racks": 4, "wavelengths": 8, "subnet": "route_broadcast"}])
def test_box_choice_giving_up_early_takes_the_box_of_pricing_every_box(config):
    from ddlsim.network.collectives.rampx.box_choice import _cheapest_box

    fabric = make_fabric("ramp", **config)
    checked = 0
    for num_ranks in (8, 24, 48, 64, 100, 128, 256, 384, 500, 512, 1000):
        if num_ranks > fabric.num_nodes:
            continue
        assert _cheapest_box(fabric, num_ranks) == _every_box(fabric, num_ranks), num_ranks
        checked += 1
    assert checked >= 5
