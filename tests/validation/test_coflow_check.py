"""The iteration-level (coflow) contention model next to flow level (`ddlsim.validation.coflow_check`)."""

from __future__ import annotations

import math

import pytest

from ddlsim.validation.coflow_check import case_rows, table
from ddlsim.validation.contention_suite import case_by_name


def test_groups_that_share_nothing_agree_exactly():
    rows = case_rows(case_by_name("disjoint_groups_no_sharing"))
    assert [row.error for row in rows] == pytest.approx([0.0, 0.0], abs=1e-12)


def test_collectives_on_the_same_nics_agree_where_the_nics_bind():
    rows = case_rows(case_by_name("same_nics_allreduce_allgather"))
    for row in rows:
        assert row.flow_s > row.alone_s * 1.2  # flow level: both slowed by the shared NICs
        assert abs(row.error) < 0.01
    text = table(rows)
    assert "median |error|" in text and all(math.isfinite(row.coflow_s) for row in rows)


def test_no_coflow_run_ends_before_its_collective_alone():
    for name in ("tp_dp_4to1", "alltoall_beside_allreduce", "opsquare_relayed_groups"):
        for row in case_rows(case_by_name(name)):
            assert row.coflow_s >= row.alone_s * (1 - 1e-9)
