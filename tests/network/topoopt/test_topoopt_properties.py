"""Properties of the TopoOpt-family fabrics: any op x size x ranks prices to a finite positive time,
more bandwidth is never slower and a larger message never faster."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ddlsim.core.types import CollectiveOp
from ddlsim.network import CollectiveEstimator, make_fabric

FABRICS = {
    "topoopt": make_fabric("topoopt", num_servers=64, gpus_per_server=2),
    "topoopt_single_gpu": make_fabric("topoopt", num_servers=96, gpus_per_server=1, degree=3),
    "expander": make_fabric("expander", num_servers=32, gpus_per_server=2),
    "ocs_reconfig": make_fabric("ocs_reconfig", num_servers=32, gpus_per_server=2),
    "sipml": make_fabric("sipml", num_servers=48),
}
ESTIMATORS = {name: CollectiveEstimator(fabric, "best") for name, fabric in FABRICS.items()}


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(fabric=st.sampled_from(sorted(FABRICS)), op=st.sampled_from(list(CollectiveOp)),
       size=st.integers(min_value=0, max_value=10**10), ranks=st.integers(min_value=1, max_value=128))
def test_any_call_prices_to_a_finite_positive_time(check_any_call, fabric, op, size, ranks):
    check_any_call(ESTIMATORS[fabric], op, size, ranks)


@pytest.mark.parametrize("name", ["topoopt", "expander", "ocs_reconfig", "sipml"])
@pytest.mark.parametrize("op", ["all_reduce", "all_to_all", "broadcast"])
def test_more_bandwidth_and_less_data_are_never_slower(name, op):
    slow = make_fabric(name, num_servers=16, link_bandwidth="25Gbps")
    fast = make_fabric(name, num_servers=16, link_bandwidth="100Gbps")
    ranks = slow.num_nodes
    times = [CollectiveEstimator(fabric, "best").estimate(op, size, num_ranks=ranks).time_s
             for fabric in (slow, fast) for size in (10**6, 10**8)]
    slow_small, slow_large, fast_small, fast_large = times
    assert fast_small <= slow_small and fast_large <= slow_large
    assert slow_small <= slow_large and fast_small <= fast_large
