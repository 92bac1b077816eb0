"""SiPCO Algorithm 1 against Table III (r = 2, L = 2), and Table II's alpha-beta terms."""

from __future__ import annotations

import numpy as np
import pytest

from ddlsim.core.errors import ConfigError
from ddlsim.network.collectives.sipco_logic import (
    all_reduce_steps,
    contributors_after_each_step,
    table2_terms,
)

CUS = "ABCD"
# Table III, CU by CU, chunk by chunk (the contributors of each partial sum). The printed
# start table (a) shows "A2 A2 C2 C2" in its third row, a typo for A2 B2 C2 D2.
TABLE3 = [
    [["A"] * 4, ["B"] * 4, ["C"] * 4, ["D"] * 4],
    [["A", "AB", "A", "AC"], ["AB", "B", "B", "BD"], ["C", "CD", "AC", "C"], ["CD", "D", "BD", "D"]],
    [["A", "ABCD", "A", "ABCD"], ["ABCD", "B", "B", "ABCD"], ["C", "ABCD", "ABCD", "C"],
     ["ABCD", "D", "ABCD", "D"]],
    [["ABCD"] * 4] * 4,
]


def as_letters(state: np.ndarray) -> list[list[str]]:
    return [["".join(CUS[i] for i in np.flatnonzero(state[cu, chunk])) for chunk in range(4)] for cu in range(4)]


@pytest.mark.parametrize("step", range(4))
def test_contents_of_every_cu_after_every_step_match_table3(step: int) -> None:
    history = contributors_after_each_step(2, 2)
    assert as_letters(history[step]) == TABLE3[step]


def test_step_structure_of_table3() -> None:
    steps = all_reduce_steps(2, 2)
    assert len(steps) == 3  # L + 1
    step0 = steps[0]
    # Step 0: chunks 0-1 over level-0 links (A-B, C-D), chunks 2-3 over level-1 links (A-C, B-D).
    assert set(np.unique(step0.chunk[step0.level == 0])) == {0, 1}
    assert set(np.unique(step0.chunk[step0.level == 1])) == {2, 3}
    step1 = steps[1]
    assert set(np.unique(step1.chunk[step1.level == 1])) == {0, 1}  # "using links in levels different"
    assert [s.reduce for s in steps] == [True, True, False]


@pytest.mark.parametrize("r,levels", [(2, 1), (2, 3), (3, 2), (4, 2), (3, 3), (8, 2)])
def test_algorithm_1_all_reduces_for_other_radices(r: int, levels: int) -> None:
    final = contributors_after_each_step(r, levels)[-1]
    assert final.all()


@pytest.mark.parametrize("r,levels", [(2, 2), (4, 3), (8, 3)])
def test_table2_sipco_bandwidth_term_is_the_bytes_one_link_carries(r: int, levels: int) -> None:
    n, beta = 1e6, 1 / 64e9
    chunk = n / (r * levels)
    carried = 0.0
    for step in all_reduce_steps(r, levels):
        rows = (step.src == 0) & (step.level == 0)
        carried += rows.sum() * chunk  # bytes CU 0 pushes into its level-0 link in this step
    p = r ** levels
    latency, bandwidth = table2_terms("sipco", p, n, 1e-6, beta, r=r, levels=levels)
    assert latency == pytest.approx((levels + 1) * 1e-6)
    assert bandwidth == pytest.approx(carried * beta)


def test_table2_terms_at_the_fig7_parameters() -> None:
    alpha, beta, n, p = 1e-6, 8 / 512e9, 100e6, 1024
    assert table2_terms("ring", p, n, alpha, beta) == pytest.approx((2046e-6, 2 * 1023 / 1024 * n * beta))
    assert table2_terms("mesh", p, n, alpha, beta) == pytest.approx((2e-6, 2 * 1023 / 1024 * n * beta))
    latency, bandwidth = table2_terms("h_ring", p, n, alpha, beta, k=8)
    assert latency == pytest.approx((4 * 7 + 2 * 127) * alpha)
    assert bandwidth == pytest.approx((4 * 7 + 2 * 127) / 8 * n * beta)
    latency, bandwidth = table2_terms("sipco", p, n, alpha, beta, r=32, levels=2)
    assert (latency, bandwidth) == pytest.approx((3e-6, 3 * 31 / 64 * n * beta))
    with pytest.raises(ConfigError):
        table2_terms("sipco", p, n, alpha, beta, r=8, levels=3)
    with pytest.raises(ConfigError):
        table2_terms("h_ring", p, n, alpha, beta, k=3)
