"""RAMP Fig. 23 (`ddlsim experiment=ramp_fig23`): RAMP-x's x-to-1 reductions against a ring's
2-to-1 ones for a 1 GB reduce-scatter, up to 3 (x - 1) / (x + 1) = 2.82x at x = 32."""

from __future__ import annotations

import pandas as pd
import pytest

from ddlsim.app.sweep.reproduce import reproduce


def test_fig23_x_to_1_reductions_reach_2_8_times_at_scale(tmp_path):
    result = reproduce("ramp_fig23", tmp_path, ["task.num_ranks=[2,1024,65536]"])
    rows = pd.read_csv(tmp_path / "results.csv")
    ring = rows[(rows.fabric == "superpod") & (rows.algorithm == "ring")].set_index("num_ranks").compute_s
    rampx = rows[(rows.fabric == "ramp") & (rows.algorithm == "rampx")].set_index("num_ranks").compute_s
    assert ring[2] == pytest.approx(rampx[2], rel=1e-12)  # two ranks: both one 2-to-1 reduction
    assert ring[65536] / rampx[65536] == pytest.approx(3 * 31 / 33, rel=0.01)
    assert any(path.name == "fig23.png" for path in result.report.paths)
    assert "side by side with the paper (ramp_fig23)" in result.report.text
