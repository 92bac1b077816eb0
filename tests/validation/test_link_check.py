"""The iteration model's per-step link loads against flow level, per collective (issue 33):
the five iteration cases and the contention suite (`ddlsim.validation.link_check`)."""

from __future__ import annotations

import pytest

from ddlsim.validation.contention_suite import CASES
from ddlsim.validation.iteration_cases import ITERATION_CASES
from ddlsim.validation.link_check import case_rows, table

TOLERANCE = 0.05


@pytest.mark.parametrize("case", ITERATION_CASES, ids=lambda case: case.name)
def test_the_iteration_cases_are_within_5_percent_of_flow_level(case):
    rows = case_rows(case)
    for row in rows:
        assert abs(row.error) < TOLERANCE, row.markdown()
        assert row.link_s >= row.alone_s * (1 - 1e-9)


def test_the_cases_the_coflow_model_got_wrong_are_now_right():
    rows = {row.case: row for case in ITERATION_CASES[:1] for row in case_rows(case)}
    rings = rows["two_rings_crossing_one_4to1_leaf"]
    assert rings.coflow_s / rings.alone_s == pytest.approx(1.0)  # before: the leaf hid the sharing
    assert rings.link_s / rings.alone_s == pytest.approx(rings.flow_s / rings.alone_s, rel=0.01)
    assert rings.flow_s / rings.alone_s > 1.9
    assert "Before (coflow)" in table(list(rows.values()))


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES, ids=lambda case: case.name)
def test_the_contention_suite_is_within_5_percent_of_flow_level(case):
    for row in case_rows(case):
        assert abs(row.error) < TOLERANCE, row.markdown()
