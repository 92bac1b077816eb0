"""Properties: any fabric x op x size x rank count prices to a finite, positive time; more
bandwidth is never slower; a larger message is never faster."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ddlsim.core.errors import InfeasibleError
from ddlsim.core.registry import ALGORITHMS
from ddlsim.core.types import CollectiveOp
from ddlsim.network import CollectiveEstimator, make_fabric
from ddlsim.network.collectives.pipelined_tree import PipelinedTree

FABRICS = {
    "ideal": make_fabric("ideal", num_nodes=4096),
    "superpod": make_fabric("superpod", num_nodes=4096, oversubscription=[2.0, 1.0]),
    "torus2d": make_fabric("torus2d", dims=[32, 128]),
    "leaf_spine": make_fabric("leaf_spine", num_nodes=1024, tier_sizes=[1024]),
}
ESTIMATORS = {name: CollectiveEstimator(fabric, "best") for name, fabric in FABRICS.items()}
GENERIC = ["ring", "torus2d", "hierarchical", "rhd", "binary_tree", "double_binary_tree", "bruck", "direct"]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(fabric=st.sampled_from(sorted(FABRICS)), op=st.sampled_from(list(CollectiveOp)),
       size=st.integers(min_value=0, max_value=10**10), ranks=st.integers(min_value=1, max_value=4096))
def test_any_call_prices_to_a_finite_positive_time(check_any_call, fabric, op, size, ranks):
    check_any_call(ESTIMATORS[fabric], op, size, ranks)


_ESTIMATORS: dict = {}


def _time(fabric, algorithm, op, size, ranks):
    estimator = _ESTIMATORS.setdefault((fabric, algorithm), CollectiveEstimator(fabric, algorithm))
    try:
        return estimator.estimate(op, size, num_ranks=ranks).time_s
    except InfeasibleError:
        return None


@pytest.mark.parametrize("name", GENERIC)
@pytest.mark.parametrize(("fabric_name", "slow", "fast"), [
    ("ideal", {"bandwidth": "100Gbps"}, {"bandwidth": "400Gbps"}),
    ("superpod", {"nic_bandwidth": "100Gbps", "num_nodes": 4096}, {"nic_bandwidth": "400Gbps", "num_nodes": 4096}),
    ("torus2d", {"node_bandwidth": "1Tbps", "dims": [32, 128]}, {"node_bandwidth": "4Tbps", "dims": [32, 128]}),
])
def test_more_bandwidth_is_never_slower(name, fabric_name, slow, fast):
    slower, faster = make_fabric(fabric_name, **slow), make_fabric(fabric_name, **fast)
    algorithm = ALGORITHMS.make(name)
    for op in sorted(algorithm.ops):
        for ranks in (2, 7, 64, 1000):
            size = 0 if op is CollectiveOp.BARRIER else 10**8
            before, after = _time(slower, algorithm, op, size, ranks), _time(faster, algorithm, op, size, ranks)
            if before is not None:
                assert after <= before * (1 + 1e-12), (op, ranks)


@pytest.mark.parametrize("name", [*GENERIC, "pipelined_tree"])
@pytest.mark.parametrize("fabric_name", sorted(FABRICS))
def test_a_larger_message_is_never_faster(name, fabric_name):
    fabric = FABRICS[fabric_name]
    # Fixed chunks: the automatic chunk count re-tunes the schedule per size (see docs/network.md).
    algorithm = PipelinedTree(chunks=8) if name == "pipelined_tree" else ALGORITHMS.make(name)
    sizes = [1, 1000, 10**6, 3 * 10**7, 10**9, 10**10]
    for op in sorted(algorithm.ops - {CollectiveOp.BARRIER}):
        for ranks in (3, 16, 600):
            times = [_time(fabric, algorithm, op, size, ranks) for size in sizes]
            if times[0] is None:
                continue
            assert all(later >= earlier * (1 - 1e-12) for earlier, later in zip(times, times[1:])), (op, ranks)


def test_best_is_no_slower_than_any_candidate():
    fabric = FABRICS["superpod"]
    best = CollectiveEstimator(fabric, "best")
    for op in (CollectiveOp.ALL_REDUCE, CollectiveOp.ALL_TO_ALL, CollectiveOp.BROADCAST):
        chosen = best.estimate(op, 10**8, num_ranks=512)
        for name in GENERIC:
            time_s = _time(fabric, ALGORITHMS.make(name), op, 10**8, 512)
            if time_s is not None:
                assert chosen.time_s <= time_s * (1 + 1e-12)
        assert chosen.algorithm in ALGORITHMS
