"""Fixtures shared by the network tests."""

from __future__ import annotations

import math
from collections.abc import Callable

import pytest

from ddlsim.core.errors import InfeasibleError
from ddlsim.core.types import CollectiveOp
from ddlsim.network import CollectiveEstimator


def _check_any_call(estimator: CollectiveEstimator, op: CollectiveOp, size: int, ranks: int) -> None:
    """One drawn call: refused with "do not fit" when too large, else finite non-negative parts
    that add up to the time, a positive time for two ranks or more and none for one."""
    if op is CollectiveOp.SEND_RECV:
        ranks = 2
    if op is CollectiveOp.BARRIER:
        size = 0
    if ranks > estimator.fabric.num_nodes:
        with pytest.raises(InfeasibleError, match="do not fit"):
            estimator.estimate(op, size, num_ranks=ranks)
        return
    result = estimator.estimate(op, size, num_ranks=ranks)
    for part in (result.time_s, result.latency_s, result.transfer_s, result.compute_s):
        assert math.isfinite(part) and part >= 0
    assert result.time_s == pytest.approx(result.latency_s + result.transfer_s + result.compute_s, rel=1e-12)
    if ranks >= 2:
        assert result.time_s > 0 and result.num_steps >= 1
    else:
        assert result.time_s == 0 and result.num_steps == 0


@pytest.fixture(scope="session")
def check_any_call() -> Callable[[CollectiveEstimator, CollectiveOp, int, int], None]:
    return _check_any_call
