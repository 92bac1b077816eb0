"""task=topoopt and task=topoopt_cost: TopoOpt's Sec. 5 systems priced through the package, with
the paper's values beside them (experiment=topoopt_fig10 ... topoopt_fig17)."""

from __future__ import annotations

import math

import pandas as pd
import pytest

import ddlsim
from ddlsim.app.sweep.reproduce import reproduce
from ddlsim.core.errors import ConfigError


def _run(*overrides: str) -> pd.DataFrame:
    parts = ddlsim.build_components(["experiment=topoopt_fig11", "hydra.mode=RUN", *overrides])
    return pd.DataFrame(parts.task.run(parts).rows).set_index("fabric")


def test_systems_rows_and_per_op_algorithms():
    rows = _run("model=topoopt_resnet50", "task.link_bandwidth=100Gbps",
                "task.systems=[topoopt,topoopt_ideal,expander,sipml]")
    assert list(rows.index) == ["topoopt", "topoopt_ideal", "expander", "sipml"]
    assert (rows["iteration_time_s"] > rows["compute_time_s"] * 0.99).all()
    # The Ideal Switch is the fastest fixed-link system (no network beats it, Sec. 5.1).
    assert rows.loc["topoopt_ideal", "iteration_time_s"] <= rows.loc["expander", "iteration_time_s"]
    assert set(rows["algorithm"]) == {"per_op"}
    assert math.isfinite(rows.loc["topoopt", "bandwidth_tax"]) and rows.loc["topoopt", "bandwidth_tax"] >= 1
    assert rows.loc["sipml", "reconfiguration_s"] == pytest.approx(25e-6)


def test_more_bandwidth_never_slows_an_iteration():
    slow, fast = (_run("model=topoopt_resnet50", f"task.link_bandwidth={b}", "task.systems=[topoopt,topoopt_ideal]")
                  for b in ("25Gbps", "200Gbps"))
    assert (fast["iteration_time_s"] <= slow["iteration_time_s"]).all()


def test_unknown_system_is_a_config_error():
    with pytest.raises(ConfigError, match="systems"):
        ddlsim.build_components(["experiment=topoopt_fig11", "hydra.mode=RUN", "task.systems=[fat_tree]"])


def test_fig10_reproduction_reports_the_paper_side_by_side(tmp_path):
    result = reproduce("topoopt_fig10", tmp_path, ["task.num_servers=[16,128,4394]"])
    assert set(result.frame["fabric"]) >= {"topoopt", "topoopt_3d_mems", "topoopt_ideal", "expander"}
    side = pd.read_csv(tmp_path / "side_by_side.csv").set_index("key")
    assert side.loc["ocs_over_patch_panel", "paper"] == "1.33x"
    assert side.loc["ideal_over_topoopt", "ddlsim"].endswith("x")
    assert (tmp_path / "figures" / "fig10.png").stat().st_size > 5_000
