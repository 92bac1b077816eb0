"""RAMP Fig. 22 (`ddlsim experiment=ramp_fig22`): the H2T/H2H ratio of ring-based all-reduces on the
1:1 SuperPod falls with scale, RAMP-x's on RAMP at 2.4 Tbps does not, and the report draws it."""

from __future__ import annotations

import pandas as pd

from ddlsim.app.sweep.reproduce import reproduce


def test_fig22_ring_ratio_falls_and_rampx_stays_within_a_decade(tmp_path):
    result = reproduce("ramp_fig22", tmp_path, ["task.sizes=[1MB,10GB]", "task.num_ranks=[16,1024,65536]"])
    rows = pd.read_csv(tmp_path / "results.csv").assign(ratio=lambda t: t.transfer_s / t.latency_s)
    ring = rows[(rows.fabric == "superpod") & (rows.algorithm == "ring")]
    for _, by_scale in ring.groupby("size_bytes"):
        assert by_scale.sort_values("num_ranks").ratio.is_monotonic_decreasing
    rampx = rows[(rows.fabric == "ramp") & (rows.algorithm == "rampx")]
    assert len(rampx) == 2 * 3
    spread = rampx.groupby("size_bytes").ratio.agg(lambda r: r.max() / r.min())
    assert (spread < 10).all()
    top = rows[rows.num_ranks == 65536]
    largest = top[top.size_bytes == top.size_bytes.max()].set_index(["fabric", "algorithm"]).ratio
    assert largest["ramp", "rampx"] > 10 and largest["superpod", "hierarchical"] > 10 > largest["superpod", "ring"]
    assert any(path.name == "fig22.png" for path in result.report.paths)
    assert "side by side with the paper (ramp_fig22)" in result.report.text
