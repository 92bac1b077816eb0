"""The public surface: estimate_collective, make_fabric, CollectiveEstimator, and their errors."""

from __future__ import annotations

import pytest

from ddlsim import CollectiveEstimator, ConfigError, InfeasibleError, estimate_collective, make_fabric
from ddlsim.core.types import CollectiveCall, CollectiveOp, GroupLayout


def test_the_issue_example_runs():
    r = estimate_collective(op="all_reduce", size_bytes=10**9, num_ranks=1024, fabric="superpod", algorithm="ring")
    assert r.algorithm == "ring" and r.num_steps == 2046 and r.fabric == "superpod"
    assert r.time_s == pytest.approx(r.latency_s + r.transfer_s + r.compute_s)
    assert r.transfer_s == pytest.approx(2 * 1023 / 1024 * 10**9 * 8 / 200e9, rel=1e-12)


def test_make_fabric_takes_yaml_names_and_units():
    fabric = make_fabric("superpod", nic_bandwidth="2.4Tbps", oversubscription=[2.0, 1.0])
    assert fabric.nic_bandwidth_bps == 2.4e12 and fabric.oversubscription == (2.0, 1.0)
    with pytest.raises(ConfigError, match=r"fabric\.nic_bandwidth = '-1Gbps': must be positive"):
        make_fabric("superpod", nic_bandwidth="-1Gbps")
    with pytest.raises(ConfigError, match="fabric.bandwith"):
        make_fabric("ideal", bandwith="1Gbps")
    with pytest.raises(ConfigError, match="unknown fabric"):
        make_fabric("no_such_fabric")


def test_make_fabric_reads_yaml_variants():
    variant = make_fabric("superpod_1to1")
    assert variant.name == "superpod" and variant.nic_bandwidth_bps == variant.node_bandwidth_bps == 2.4e12
    assert make_fabric("superpod_1to1", num_nodes=1024).num_nodes == 1024


@pytest.mark.parametrize(("kwargs", "error", "match"), [
    ({"op": "allreduce"}, ConfigError, "unknown op"),
    ({"size_bytes": -1}, ConfigError, "size_bytes"),
    ({"op": "barrier", "size_bytes": 10}, ConfigError, "barrier carries no data"),
    ({"op": "send_recv", "num_ranks": 3}, ConfigError, "send_recv needs a group of 2"),
    ({"num_ranks": 0}, ConfigError, "num_ranks"),
    ({"root": 9}, ConfigError, "root"),
    ({"num_ranks": 70000}, InfeasibleError, "70000 ranks do not fit on ideal"),
    ({"algorithm": "bruck"}, InfeasibleError, "bruck cannot run all_reduce"),
    ({"algorithm": "no_such_algorithm"}, ConfigError, "unknown collective algorithm"),
])
def test_invalid_calls_are_clear_errors(kwargs, error, match):
    call = {"op": "all_reduce", "size_bytes": 10**6, "num_ranks": 8, "fabric": "ideal", "algorithm": "ring", **kwargs}
    with pytest.raises(error, match=match):
        estimate_collective(**call)


def test_layout_and_num_ranks_must_agree():
    with pytest.raises(ConfigError, match="layout's group size"):
        estimate_collective("all_reduce", 10**6, 16, "ideal", layout=GroupLayout(8, 2, 16))


def test_sizes_with_units_and_determinism():
    first = estimate_collective("all_gather", "1GB", 64, "superpod", "best")
    again = CollectiveEstimator(make_fabric("superpod"), "best").estimate("all_gather", 10**9, num_ranks=64)
    assert first == again and first.size_bytes == 10**9


def test_single_rank_groups_cost_nothing():
    for op in (CollectiveOp.ALL_REDUCE, CollectiveOp.BROADCAST, CollectiveOp.ALL_TO_ALL):
        result = estimate_collective(op, 10**6, 1, "superpod", "ring")
        assert result.time_s == 0 and result.num_steps == 0


def test_estimate_call_prices_a_collective_call():
    estimator = CollectiveEstimator(make_fabric("superpod"), "best")
    call = CollectiveCall(CollectiveOp.ALL_REDUCE, 10**8, GroupLayout(8, 8, 64), count=5)
    assert estimator(call) == estimator.estimate("all_reduce", 10**8, layout=GroupLayout(8, 8, 64))


def test_tensor_parallel_groups_use_nvlink_and_data_parallel_groups_the_nics():
    estimator = CollectiveEstimator(make_fabric("superpod"), "ring", device=None)
    tp = estimator.estimate("all_reduce", 10**8, layout=GroupLayout(8, 1, 64))
    dp = estimator.estimate("all_reduce", 10**8, layout=GroupLayout(8, 8, 64))
    assert tp.transfer_s == pytest.approx(2 * 7 / 8 * 10**8 * 8 / 2.4e12, rel=1e-12)
    assert dp.transfer_s == pytest.approx(2 * 7 / 8 * 10**8 * 8 / 200e9, rel=1e-12)


def test_concurrent_groups_share_oversubscribed_uplinks():
    # 32 pairs (g, g + 32), all at once: 32 flows leave leaf 0 through uplinks of 32 x 200G / 4.
    layout = GroupLayout(2, 32, 64)
    blocking = CollectiveEstimator(make_fabric("superpod", oversubscription=[4.0, 1.0]), "direct", None)
    open_tree = CollectiveEstimator(make_fabric("superpod"), "direct", None)
    slow = blocking.estimate("all_to_all", 10**8, layout=layout)
    fast = open_tree.estimate("all_to_all", 10**8, layout=layout)
    assert slow.transfer_s == pytest.approx(4 * fast.transfer_s, rel=1e-12)


def test_best_reports_the_algorithm_it_chose():
    result = estimate_collective("all_reduce", 10**9, 1024, "superpod", "best")
    ring = estimate_collective("all_reduce", 10**9, 1024, "superpod", "ring")
    assert result.algorithm != "best" and result.time_s <= ring.time_s
    with pytest.raises(ConfigError, match="exclude"):
        CollectiveEstimator(make_fabric("ideal"), {"name": "best", "exclude": ["nope"]})
