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


def _every_rule(dims, src, dst, members, use_all, kind):
    best = None
    for plan in transcoder.plan_step_rules(dims, src, dst, members=members, rules=RULES, use_all=use_all, kind=kind):
        if best is None or plan.slowdown < best.slowdown:
            best = plan
    return best.per_pair, best.rounds


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
            assert (quick.per_pair, quick.rounds) == _every_rule(dims, src, dst, peers + 1, use_all, kind)
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


def _plan_of(dims, src, dst, members, rules, use_all, kind):
    best = None
    for plan in transcoder.plan_step_rules(dims, src, dst, members=members, rules=rules, use_all=use_all, kind=kind):
        if best is None or plan.slowdown < best.slowdown:
            best = plan
    return best
