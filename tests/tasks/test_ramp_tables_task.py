"""task=ramp_tables (experiment=ramp_tables_9_10): RAMP Tables 9 and 10 rebuilt cell by cell."""

from __future__ import annotations

import pandas as pd
import pytest

import ddlsim
from ddlsim.app.sweep.reproduce import reproduce
from ddlsim.core.errors import ConfigError
from ddlsim.report.references.ramp_tables import TITLES
from ddlsim.tasks.ramp_tables import TABLES


def test_tables_rebuilt_beside_the_paper(tmp_path):
    result = reproduce("ramp_tables_9_10", tmp_path, ["task.tables=[table9_architecture,table10_paper_batch]"])
    cells = result.frame
    assert set(cells["table"]) == {"table9_architecture", "table10_paper_batch"}
    # Given the paper's architecture, the partitioner gives its parameter counts and MP degrees.
    arch = cells[cells["table"] == "table9_architecture"]
    for column in ("params", "MP", "d_model"):
        assert arch[arch["column"] == column]["agrees_as_printed"].all()
    assert len(arch[arch["column"] == "params"]) == 10
    side = pd.read_csv(tmp_path / "side_by_side.csv")
    assert side["source"].str.startswith("RAMP Table 10").any()
    assert "(ours / paper)" in result.report.text


def test_the_report_titles_every_table_the_task_builds():
    assert list(TITLES) == list(TABLES)


def test_unknown_table_is_a_config_error():
    with pytest.raises(ConfigError, match="tables"):
        ddlsim.build_components(["experiment=ramp_tables_9_10", "hydra.mode=RUN", "task.tables=[table11]"])


def test_cost_tables_reproduction(tmp_path):
    result = reproduce("ramp_tables_3_4", tmp_path)
    assert set(result.frame["table"]) == {"table3", "table4"}
    side = pd.read_csv(tmp_path / "side_by_side.csv")
    dcn = side[side["quantity"] == "Table 3: dcn_fat_tree (oversubscription 1) usd_per_gbps"]
    assert dcn["paper"].astype(float).item() == pytest.approx(dcn["ddlsim"].astype(float).item(), rel=1e-3)
    assert "RAMP Table 4 recomputed" in result.report.text
