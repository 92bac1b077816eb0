"""TopoOpt Figs. 27 and 28 (`ddlsim experiment=topoopt_fig27`, ``topoopt_fig28``): Fig. 11's sweep
at d = 8, and TopoOpt's iteration time against the server degree."""

from __future__ import annotations

import pandas as pd

from ddlsim.app.sweep.reproduce import reproduce


def test_fig27_runs_fig11_at_degree_8_with_ideal_never_slower(tmp_path):
    result = reproduce("topoopt_fig27", tmp_path, ["model=topoopt_dlrm", "task.link_bandwidth=100Gbps"])
    rows = pd.read_csv(tmp_path / "results.csv").set_index("fabric")
    assert set(rows["degree"]) == {8}
    assert {"topoopt", "topoopt_ideal", "topoopt_fat_tree"} <= set(rows.index)
    # DLRM's all-to-alls: the Ideal Switch beats TopoOpt's forwarding at d = 8 too (Fig. 11's 1.3x).
    assert rows.loc["topoopt", "iteration_time_s"] > 1.1 * rows.loc["topoopt_ideal", "iteration_time_s"]
    side = pd.read_csv(tmp_path / "side_by_side.csv").set_index("key")
    assert side.loc["as_fig11", "ddlsim"].startswith("Fat-tree / TopoOpt")
    assert any(path.name == "fig27.png" for path in result.report.paths)


def test_fig28_more_degree_is_faster_and_helps_network_heavy_models_most(tmp_path):
    result = reproduce("topoopt_fig28", tmp_path, ["task.link_bandwidth=100Gbps", "task.degree=2,8"])
    rows = pd.read_csv(tmp_path / "results.csv")
    time = rows.pivot_table(index="model", columns="degree", values="iteration_time_s")
    gain = time[2] / time[8]
    assert (gain > 1).all()
    assert gain["topoopt_dlrm"] > gain["topoopt_candle"] > gain["topoopt_bert"]
    assert any(path.name == "fig28.png" for path in result.report.paths)


def test_fig15_rows_carry_the_most_and_least_loaded_link(tmp_path):
    result = reproduce("topoopt_fig15", tmp_path)
    rows = pd.read_csv(tmp_path / "results.csv").set_index("degree")
    assert list(rows.index) == [4, 8]
    assert (rows["mp_max_link_bytes"] > rows["mp_min_link_bytes"]).all()
    assert (rows["mp_min_link_bytes"] > 0).all()
    side = pd.read_csv(tmp_path / "side_by_side.csv").set_index("key")
    assert side.loc["spread_d4", "paper"] == "39%" and side.loc["spread_d8", "ddlsim"].endswith("%")
    assert any(path.name == "fig15.png" for path in result.report.paths)
