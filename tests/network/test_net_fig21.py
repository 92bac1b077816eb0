"""RAMP Fig. 21, electrical half (`ddlsim experiment=ramp_fig21`, scripts/ramp_fig21_electrical.py):
rows, figure and RAMP 8.4's ordering of the electrical strategies at the largest scale."""

from __future__ import annotations

import pandas as pd

from ddlsim.app.sweep.reproduce import reproduce


def test_fig21_reproduction_orders_the_electrical_strategies(tmp_path):
    result = reproduce("ramp_fig21", tmp_path, ["task.sizes=[1MB,1GB]", "task.num_ranks=[16,1024,65536]"])
    written = pd.read_csv(tmp_path / "results.csv")
    assert len(written) == len(result.frame) == 2 * 3 * 4
    assert any(path.suffix == ".png" for path in result.report.paths)
    top = written[written.num_ranks == written.num_ranks.max()]
    for size in top.size_bytes.unique():
        at_size = top[top.size_bytes == size].groupby("algorithm").time_s.min()
        torus = at_size.filter(like="torus2d").min()
        assert at_size["ring"] > torus >= at_size["hierarchical"]
    assert "side by side with the paper" in result.report.text
