"""The WRHT reproduction scripts run and write their tables, CSV files and plots."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pandas as pd
import pytest

SCRIPTS = Path(__file__).resolve().parents[3] / "scripts"


def _load(name: str):
    spec = importlib.util.spec_from_file_location(name, SCRIPTS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_table1_script(tmp_path, capsys):
    assert _load("wrht_table1").main(["--out", str(tmp_path)]) == 0
    table = pd.read_csv(tmp_path / "table1.csv").set_index("algorithm")
    assert (table.formula_steps == table.paper_steps).all()
    assert table.loc["Ring", "ours_steps"] == 2046 and table.loc["BT", "ours_steps"] == 20
    assert table.loc["WRHT (m=129)", "ours_steps"] == 3 and table.loc["H-Ring (m=5)", "ours_steps"] == 416
    budget = pd.read_csv(tmp_path / "optical_budget.csv")
    assert budget.loc[budget.N == 1024, "m_prime"].item() == "76"
    assert (tmp_path / "table1.png").stat().st_size > 5_000
    assert "Table 1" in capsys.readouterr().out


@pytest.mark.slow
def test_fig5_6_script(tmp_path):
    assert _load("wrht_fig5_6").main(["--out", str(tmp_path)]) == 0
    claims = pd.read_csv(tmp_path / "comparison.csv")
    assert len(claims) == 7
    results = pd.read_csv(tmp_path / "results.csv")
    fig5 = results[(results.figure == "fig5") & (results.algorithm == "wrht")]
    assert fig5.groupby("wavelengths").num_steps.first().to_dict() == {4: 7, 16: 4, 64: 3, 256: 3}
    for stem in ("fig4", "fig5", "fig6"):
        assert (tmp_path / f"{stem}.png").stat().st_size > 10_000


@pytest.mark.slow
def test_fig7_script(tmp_path):
    assert _load("wrht_fig7").main(["--out", str(tmp_path)]) == 0
    results = pd.read_csv(tmp_path / "results.csv")
    assert set(results.series) == {"E-Ring", "E-RD", "O-Ring", "WRHT"}
    assert len(results) == 4 * 4 * 4
    assert (tmp_path / "fig7.png").stat().st_size > 10_000
