"""The torus's windows of classes (pipelined and level-by-level trees) priced from per-class link
loads give the same estimates, float for float, as pricing every window by its own pairs."""

from __future__ import annotations

import numpy as np
import pytest

import ddlsim
from ddlsim.core.types import CollectiveOp, GroupLayout
from ddlsim.network import CollectiveEstimator, make_fabric
from ddlsim.network.collectives.base import ScheduleRequest
from ddlsim.network.fabrics import torus as torus_module
from ddlsim.network.fabrics import torus_windows


def estimates(fabric, algorithm: str, ops, ranks, sizes) -> list:
    ddlsim.clear_caches()
    estimator = CollectiveEstimator(fabric, algorithm)
    found = []
    for op in ops:
        for n in ranks:
            selector = getattr(estimator.algorithm, "is_selector", False)
            if not selector and estimator.algorithm.supports(fabric, CollectiveOp(op), n) is not None:
                continue
            found += [estimator.estimate(CollectiveOp(op), size, num_ranks=n) for size in sizes]
    return found


@pytest.mark.parametrize(("algorithm", "dims"), [
    *[(name, dims) for name in ("pipelined_tree", "binary_tree") for dims in ((16, 16), (8, 12), (33, 31))],
    *[(name, dims) for name in ("ring", "hierarchical") for dims in ((16, 16), (8, 12))],  # one class per window
    ("best", (8, 12)),  # `best` gives up on candidates window by window: the same choices and prices
    pytest.param("best", (33, 31), marks=pytest.mark.slow),
])
def test_window_prices_equal_window_by_window_pricing(algorithm, dims, monkeypatch):
    ops, ranks, sizes = ("all_reduce", "reduce", "broadcast"), (3, 7, 64, 95, dims[0] * dims[1]), (1000, 10**9)
    fast = estimates(make_fabric("torus2d", dims=list(dims)), algorithm, ops, ranks, sizes)
    monkeypatch.setattr(torus_module.Torus2D, "price_windows", lambda self, *args: None)
    slow = estimates(make_fabric("torus2d", dims=list(dims)), algorithm, ops, ranks, sizes)
    assert len(fast) >= len(ops) * len(sizes)
    assert fast == slow


def test_class_loads_are_recomputed_when_they_do_not_fit_the_budget(monkeypatch):
    torus = make_fabric("torus2d", dims=[32, 32])
    kept = estimates(torus, "pipelined_tree", ("all_reduce",), (1024,), (10**9,))
    monkeypatch.setattr(torus_windows, "KEPT_CELLS", 0)
    recomputed = estimates(torus, "pipelined_tree", ("all_reduce",), (1024,), (10**9,))
    assert kept == recomputed


def test_windows_in_any_order_and_overlap_equal_each_window_alone():
    torus = make_fabric("torus2d", dims=[12, 10])
    n = torus.num_nodes
    layout, placement = GroupLayout(n), torus.place(n)
    estimator = CollectiveEstimator(torus, "pipelined_tree")
    request = ScheduleRequest(CollectiveOp.REDUCE, n, 0, 10**6, torus, layout, placement)
    step = next(step for step in estimator.schedule(estimator.algorithm, request).steps if step.windows is not None)
    classes = step.pattern.num_classes
    rng = np.random.default_rng(3)
    first = rng.integers(0, classes, 40)
    windows = np.stack([first, np.minimum(first + rng.integers(0, classes, 40), classes - 1)], axis=1)
    latency, s_per_unit = torus.price_windows(step.pattern, windows, layout, placement)
    for index, (low, high) in enumerate(windows):
        alone = torus.price(step.pattern.select(int(low), int(high)), layout, placement)
        assert (latency[index], s_per_unit[index]) == (alone.latency_s, alone.s_per_unit)


@pytest.mark.parametrize("op", [CollectiveOp.REDUCE, CollectiveOp.BROADCAST])
def test_whole_pattern_of_many_flows_equals_the_routed_price(op, monkeypatch):
    from ddlsim.network.fabrics.base import Fabric

    monkeypatch.setattr(torus_module, "PADDED_HOP_ENTRIES", 64)  # every pattern routed as interval loads
    torus = make_fabric("torus2d", dims=[16, 12])
    n = torus.num_nodes
    layout, placement = GroupLayout(n), torus.place(n)
    estimator = CollectiveEstimator(torus, "pipelined_tree")
    request = ScheduleRequest(op, n, 0, 10**6, torus, layout, placement)
    step = next(step for step in estimator.schedule(estimator.algorithm, request).steps if step.windows is not None)
    ours = torus.price(step.pattern, layout, placement)
    routed = Fabric.price_listed(torus, step.pattern, layout, placement)
    assert (ours.latency_s, ours.s_per_unit, ours.disjoint) == (routed.latency_s, routed.s_per_unit, False)
    assert routed.class_latency_s is None and ours.class_latency_s is None
