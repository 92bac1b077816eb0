"""The WRHT reproductions (`ddlsim experiment=wrht_*`, which scripts/wrht_*.py run) report the
paper's step counts, Section 4's optical budget, and their figures."""

from __future__ import annotations

import pandas as pd
import pytest

from ddlsim.app.sweep.reproduce import reproduce
from ddlsim.network.fabrics.optical_ring.section4 import budget_rows


def test_table1_reproduction(tmp_path):
    result = reproduce("wrht_table1", tmp_path)
    steps = result.frame[result.frame.num_ranks == 1024].set_index("algorithm").num_steps
    assert steps["ring"] == 2046 and steps["binomial_tree"] == 20 and steps["hring"] == 416
    assert steps.filter(like="wrht").item() == 3
    side = pd.read_csv(tmp_path / "side_by_side.csv")
    assert "WRHT 4.2, Table 1" in set(side.source)
    assert (tmp_path / "figures" / "table1.png").stat().st_size > 5_000
    budget = {row["N"]: row["m_prime"] for row in budget_rows()}
    assert budget[1024] == 76


@pytest.mark.slow
def test_fig5_reproduction(tmp_path):
    result = reproduce("wrht_fig5", tmp_path)
    wrht = result.frame[result.frame.algorithm.str.startswith("wrht")]
    assert wrht.groupby("fabric_wavelengths").num_steps.first().to_dict() == {4: 7, 16: 4, 64: 3, 256: 3}
    assert any(path.suffix == ".png" for path in result.report.paths)


@pytest.mark.slow
def test_fig7_reproduction(tmp_path):
    result = reproduce("wrht_fig7", tmp_path)
    assert set(result.frame.fabric) == {"superpod", "optical_ring"}  # the fat-tree is option wrht_fattree
    assert len(result.frame) == 2 * 2 * 4 * 4
    assert any(path.suffix == ".png" for path in result.report.paths)
