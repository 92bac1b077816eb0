"""`best` prunes and orders its candidates (`ddlsim.network.selection`) without changing its choice.

- Every candidate's floor (local work plus one minimum hop latency per step with traffic) is
  at most its price (up to rounding), on every fabric kind here; so is every unwindowed step's
  floor with the busiest node's bytes over its capacity, on every registered fabric.
- The torus and the ideal switch tell each class's latency (equal to the price of the class
  alone) and a floor of its transfer without pricing loads.
- `best` (pruned, ordered, giving up early) chooses the same algorithm at the same price as
  pricing every candidate in full and keeping the smallest (price, name); it guesses (to order
  them) only candidates whose floor could still win.
- The torus's closed-form full shift (Bruck, the dissemination barrier, rings) equals the
  flow-by-flow price float for float, and its sparse busiest-link sweep the dense interval sums.
"""

from __future__ import annotations

import numpy as np
import pytest

from ddlsim.app.catalog import load_all
from ddlsim.core.errors import InfeasibleError
from ddlsim.core.registry import FABRICS
from ddlsim.core.types import CollectiveOp, GroupLayout
from ddlsim.network import CollectiveEstimator, make_fabric
from ddlsim.network.collectives.base import ScheduleRequest
from ddlsim.network.estimate import price_schedule
from ddlsim.network.fabrics.base import Fabric
from ddlsim.network.fabrics.torus_forms import shift_cost
from ddlsim.network.fabrics.torus_rings import ring_interval_loads, sparse_interval_max
from ddlsim.network.patterns import Pairs, shift_pairs
from ddlsim.network.placing import place_ranks
from ddlsim.network.selection import floor_s

OPS = [op for op in CollectiveOp if op is not CollectiveOp.SEND_RECV]


def _fabrics(n: int) -> dict:
    return {
        "ideal": make_fabric("ideal", num_nodes=n),
        "superpod": make_fabric("superpod", num_nodes=n),
        "torus2d": make_fabric("torus2d", num_nodes=n, dims=[], router_latency="7ns"),
        "leaf_spine": make_fabric("leaf_spine", num_nodes=n, tier_sizes=[n]),
    }


def _every_candidate(fabric, op: CollectiveOp, size_bytes: int, n: int):
    """(price, name, estimate) of every candidate of `best`, each priced in full on its own."""
    load_all()
    priced = []
    for candidate in CollectiveEstimator(fabric, "best").algorithm.candidates(op):
        if candidate.supports(fabric, op, n) is not None:
            continue
        try:
            estimate = CollectiveEstimator(fabric, candidate).estimate(op, size_bytes, num_ranks=n)
        except InfeasibleError:
            continue
        priced.append((estimate.time_s, candidate.name, estimate))
    return priced


@pytest.mark.parametrize("n", [16, 64, 256])
@pytest.mark.parametrize("fabric_name", ["ideal", "superpod", "torus2d", "leaf_spine"])
def test_best_chooses_what_pricing_every_candidate_chooses(fabric_name, n):
    fabric = _fabrics(n)[fabric_name]
    checked = 0
    for op in OPS:
        for size_bytes in ([0] if op is CollectiveOp.BARRIER else [4096, 10**9]):
            priced = _every_candidate(fabric, op, size_bytes, n)
            if not priced:
                continue
            time_s, name, alone = min(priced, key=lambda entry: entry[:2])
            chosen = CollectiveEstimator(fabric, "best").estimate(op, size_bytes, num_ranks=n)
            assert (chosen.algorithm, chosen.time_s) == (name, time_s), (op, size_bytes)
            assert (chosen.latency_s, chosen.transfer_s, chosen.compute_s) == (
                alone.latency_s, alone.transfer_s, alone.compute_s)
            checked += 1
    assert checked >= 10


def test_best_guesses_only_candidates_that_could_still_win(monkeypatch):
    """A rough guess can cost as much as a price at scale (the ring's on a 2^20-rank torus), so
    `best` guesses candidates in the order of their floors and drops, unguessed, those whose floor
    is above the best price found; its choice is still that of pricing every candidate."""
    import ddlsim.network.estimator as estimator

    guessed = []

    def recording(schedule, *arguments):
        guessed.append(schedule)
        return rough_price_s(schedule, *arguments)

    rough_price_s = estimator.rough_price_s
    monkeypatch.setattr(estimator, "rough_price_s", recording)
    fabric = make_fabric("ideal", num_nodes=4096)
    priced = _every_candidate(fabric, CollectiveOp.BARRIER, 0, 4096)
    chosen = CollectiveEstimator(fabric, "best").estimate(CollectiveOp.BARRIER, 0, num_ranks=4096)
    assert (chosen.algorithm, chosen.time_s) == min(priced, key=lambda entry: entry[:2])[1::-1]
    assert 0 < len(guessed) < len(priced)


@pytest.mark.parametrize("fabric_name", ["ideal", "superpod", "torus2d", "leaf_spine"])
def test_every_candidates_floor_is_at_most_its_price(fabric_name):
    n = 64
    fabric = _fabrics(n)[fabric_name]
    estimator = CollectiveEstimator(fabric, "best")
    checked = 0
    for op in OPS:
        size_bytes = 0 if op is CollectiveOp.BARRIER else 10**8
        layout = GroupLayout(n)
        request = ScheduleRequest(op, n, 0, size_bytes, fabric, layout, fabric.place(n))
        for candidate in estimator.algorithm.candidates(op):
            if candidate.supports(fabric, op, n) is not None:
                continue
            try:
                schedule = estimator.schedule(candidate, request)
                result = price_schedule(estimator.pricer, schedule, layout, request.placement, size_bytes,
                                        estimator.model)
            except InfeasibleError:
                continue
            # Sums in another order may differ by rounding; `best` prunes with a margin of 1e-9.
            floor = floor_s(schedule, estimator.pricer, size_bytes, estimator.model)
            assert floor <= result.time_s * (1 + 1e-12), (op, candidate.name)
            checked += 1
    assert checked >= 20


def _registered_fabric_names() -> list[str]:
    load_all()
    return sorted(entry.name for entry in FABRICS)


SMALL_DEFAULTS = {"ideal": {"num_nodes": 64}, "superpod": {"num_nodes": 64}, "torus2d": {"num_nodes": 64, "dims": []}}


@pytest.mark.parametrize("fabric_name", _registered_fabric_names())
def test_every_unwindowed_steps_node_floor_is_at_most_its_price(fabric_name):
    """The floor `best` prunes with (`StepPricer.step_floor_s`) never exceeds the step's price, so
    pruning on it cannot change a choice: checked for every candidate's steps on every fabric."""
    n = 64
    fabric = make_fabric(fabric_name, **SMALL_DEFAULTS.get(fabric_name, {}))
    estimator = CollectiveEstimator(fabric, "best")
    pricer, layout = estimator.pricer, GroupLayout(n)
    placement = place_ranks(fabric, layout.job_ranks)
    checked = 0
    for op in OPS:
        size_bytes = 10**8 + 7
        request = ScheduleRequest(op, n, 0, size_bytes, fabric, layout, placement)
        for candidate in estimator.algorithm.candidates(op):
            if candidate.supports(fabric, op, n) is not None:
                continue
            try:
                schedule = estimator.schedule(candidate, request)
            except InfeasibleError:
                continue
            previous = None
            for step in schedule.steps:
                if not step.is_communication:
                    continue
                # Circuit set-ups count in a step's price as `price_schedule` adds them.
                setup_s = fabric.setup_time_s(previous, step.circuit) + (step.repeat - 1) * fabric.setup_time_s(
                    step.circuit, step.circuit)
                previous = step.circuit
                if step.windows is not None:
                    continue
                try:
                    cost = pricer.cost(step.pattern, layout, placement)
                except InfeasibleError:  # the fabric cannot run this step (an optical ring's channels)
                    continue
                floor = pricer.step_floor_s(step, layout, placement, size_bytes)
                priced = setup_s + cost.latency_s * step.repeat + float(np.sum(fabric.transfer_time_s(
                    step.fractions() * size_bytes, cost.s_per_unit)))
                assert floor <= priced * (1 + 1e-12), (op, candidate.name, step.label, floor, priced)
                checked += floor > step.repeat * fabric.min_latency_s()
    assert checked >= 10


def test_sparse_interval_max_equals_the_dense_interval_sums():
    rng = np.random.default_rng(7)
    for _ in range(2000):
        lines, ring, flows = int(rng.integers(1, 9)), int(rng.integers(2, 13)), int(rng.integers(0, 40))
        line = rng.integers(0, lines, flows)
        start = rng.integers(0, ring, flows)
        length = rng.integers(1, ring // 2 + 1, flows)
        weight = rng.integers(0, 6, flows).astype(np.float64)
        dense = float(ring_interval_loads(line, start, length, weight, lines, ring).max()) if flows else 0.0
        assert sparse_interval_max(line, start, length, weight, ring) == dense


CLASS_FLOOR_FABRICS = {
    "torus2d": lambda n: make_fabric("torus2d", dims=[8, 12], router_latency="7ns"),
    "ideal": lambda n: make_fabric("ideal", num_nodes=n),
    "superpod": lambda n: make_fabric("superpod", num_nodes=n, tier_sizes=[16, 32, n], oversubscription=[2.0, 1.0]),
    "leaf_spine": lambda n: make_fabric("leaf_spine", num_nodes=n, tier_sizes=[n]),
}


@pytest.mark.parametrize("fabric_name", sorted(CLASS_FLOOR_FABRICS))
@pytest.mark.parametrize("algorithm", ["binary_tree", "double_binary_tree", "pipelined_tree"])
def test_class_floor_is_each_class_latency_and_at_most_its_transfer(algorithm, fabric_name):
    n = 96
    fabric = CLASS_FLOOR_FABRICS[fabric_name](n)
    estimator = CollectiveEstimator(fabric, algorithm)
    layout = GroupLayout(n)
    placement = fabric.place(n)
    checked = 0
    for op in (CollectiveOp.ALL_REDUCE, CollectiveOp.BROADCAST, CollectiveOp.REDUCE, CollectiveOp.GATHER):
        if estimator.algorithm.supports(fabric, op, n) is not None:
            continue
        request = ScheduleRequest(op, n, 0, 10**6, fabric, layout, placement)
        for step in estimator.schedule(estimator.algorithm, request).steps:
            pattern = step.pattern
            if step.windows is None or not isinstance(pattern, Pairs):
                continue
            floors = [found for found in (fabric.class_floor(pattern, layout, placement),
                                          fabric.pipeline_floor(pattern, layout, placement)) if found is not None]
            assert floors
            for latency, s_per_unit in floors:
                for klass in range(pattern.num_classes):
                    selected = pattern.select(klass, klass)
                    for alone in (fabric.price(selected, layout, placement),
                                  Fabric.price_listed(fabric, selected, layout, placement)):
                        assert latency[klass] == alone.latency_s
                        assert s_per_unit[klass] <= alone.s_per_unit
                    checked += 1
    assert checked >= 8


def _listed(pattern: Pairs) -> Pairs:
    return Pairs(pattern.group_size, pattern.src, pattern.dst, pattern.weight, key=("listed", pattern.key),
                 one_to_one=True)


@pytest.mark.parametrize("dims", [(8, 8), (4, 16), (16, 4), (2, 8), (8, 6), (5, 7), (1, 8), (8, 1), (3, 3)])
def test_torus_shift_closed_form_equals_the_listed_price(dims):
    torus = make_fabric("torus2d", dims=list(dims), router_latency="7ns")
    checked = 0
    for n in range(2, torus.num_nodes + 1):
        layout, placement = GroupLayout(n), torus.place(n)
        for offset in range(1, n):
            pattern = shift_pairs(n, 1, n, offset, weight=1 / 3)
            closed = shift_cost(torus, pattern, layout, placement)
            if closed is None:
                continue
            listed = torus.price_listed(_listed(pattern), layout, placement)
            assert (closed.latency_s, closed.s_per_unit) == (listed.latency_s, listed.s_per_unit), (n, offset)
            checked += 1
    assert checked >= torus.num_nodes - 1  # at least every offset of the whole torus


@pytest.mark.parametrize("op", ["all_gather", "all_to_all", "barrier"])
def test_torus_bruck_at_4096_ranks_matches_flow_by_flow_pricing(op, monkeypatch):
    import ddlsim.network.fabrics.torus as torus_module

    torus = make_fabric("torus2d", dims=[64, 64])
    size_bytes = 0 if op == "barrier" else 10**9
    closed = CollectiveEstimator(torus, "bruck").estimate(op, size_bytes, num_ranks=4096)
    monkeypatch.setattr(torus_module, "shift_cost", lambda *args: None)
    listed = CollectiveEstimator(torus, "bruck").estimate(op, size_bytes, num_ranks=4096)
    assert closed == listed
    assert np.isfinite(closed.time_s)


@pytest.mark.parametrize("dims", [(8, 8), (4, 16), (16, 4), (8, 6), (6, 4), (12, 6)])
def test_torus_shift_along_one_dimension_equals_the_listed_price(dims):
    torus = make_fabric("torus2d", dims=list(dims), router_latency="7ns")
    checked = 0
    for n in range(2, torus.num_nodes + 1):
        layout, placement = GroupLayout(n), torus.place(n)
        for stride in range(1, n + 1):
            for size in range(2, n // stride + 1):
                if n % (stride * size):
                    continue
                for offset in range(1, size):
                    pattern = shift_pairs(n, stride, size, offset, weight=1 / 3)
                    closed = shift_cost(torus, pattern, layout, placement)
                    if closed is None:
                        continue
                    listed = torus.price_listed(_listed(pattern), layout, placement)
                    assert (closed.latency_s, closed.s_per_unit) == (listed.latency_s, listed.s_per_unit), (
                        n, stride, size, offset)
                    checked += 1
    assert checked >= 100


@pytest.mark.parametrize("algorithm", ["torus2d", "hierarchical", "ring"])
@pytest.mark.parametrize("op", ["all_reduce", "all_gather", "broadcast"])
def test_torus_rings_at_4096_ranks_match_flow_by_flow_pricing(algorithm, op, monkeypatch):
    import ddlsim.network.fabrics.torus as torus_module

    torus = make_fabric("torus2d", dims=[64, 64])
    closed = CollectiveEstimator(torus, algorithm).estimate(op, 10**9, num_ranks=4096)
    monkeypatch.setattr(torus_module, "shift_cost", lambda *args: None)
    listed = CollectiveEstimator(torus, algorithm).estimate(op, 10**9, num_ranks=4096)
    assert closed == listed


@pytest.mark.parametrize("dims", [(8, 12), (16, 4), (5, 7)])
@pytest.mark.parametrize("algorithm", ["pipelined_tree", "binary_tree", "double_binary_tree"])
def test_torus_window_prices_equal_each_window_priced_alone(dims, algorithm):
    torus = make_fabric("torus2d", dims=list(dims), router_latency="7ns")
    n = torus.num_nodes
    layout, placement = GroupLayout(n), torus.place(n)
    estimator = CollectiveEstimator(torus, algorithm)
    checked = 0
    for op in (CollectiveOp.ALL_REDUCE, CollectiveOp.BROADCAST, CollectiveOp.GATHER):
        if estimator.algorithm.supports(torus, op, n) is not None:
            continue
        request = ScheduleRequest(op, n, 0, 10**6, torus, layout, placement)
        for step in estimator.schedule(estimator.algorithm, request).steps:
            if step.windows is None:
                continue
            windows = np.unique(np.stack(step.windows, axis=1), axis=0)
            latency, s_per_unit = torus.price_windows(step.pattern, windows, layout, placement)
            for index, (first, last) in enumerate(windows):
                alone = torus.price(step.pattern.select(int(first), int(last)), layout, placement)
                assert (latency[index], s_per_unit[index]) == (alone.latency_s, alone.s_per_unit)
                checked += 1
    assert checked >= 4


def test_window_max_equals_the_maximum_of_each_window():
    from ddlsim.network.pricing import SMALL_WINDOW_TABLE, window_max

    rng = np.random.default_rng(7)
    for size in (1, 2, 17, SMALL_WINDOW_TABLE, SMALL_WINDOW_TABLE + 1, 600):  # both the table and the sparse table
        values = rng.uniform(-1.0, 5.0, size)
        low = rng.integers(0, size, 300)
        high = np.minimum(low + rng.integers(0, size, 300), size - 1)
        expected = np.array([values[first:last + 1].max() for first, last in zip(low, high)])
        assert np.array_equal(window_max(values, low, high), expected)


def test_window_max_reads_pipeline_windows_exactly():
    """Windows that fill and drain a pipeline (running maxima) and windows of one width (one level
    of the sparse table), beside a mixture of widths."""
    from ddlsim.network.pricing import window_max

    rng = np.random.default_rng(11)
    for size, chunks in ((300, 1), (300, 7), (300, 300), (300, 1000), (1000, 64)):
        values = rng.uniform(0.0, 3.0, size)
        step = np.arange(size + chunks - 1)
        low, high = np.maximum(0, step - chunks + 1), np.minimum(size - 1, step)
        expected = np.array([values[first:last + 1].max() for first, last in zip(low, high)])
        assert np.array_equal(window_max(values, low, high), expected)
        inner = (low > 0) & (high < size - 1)
        assert np.array_equal(window_max(values, low[inner], high[inner]), expected[inner])
