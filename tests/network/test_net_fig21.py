"""The RAMP Fig. 21 (electrical half) script runs and writes its CSV and plot."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pandas as pd

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "ramp_fig21_electrical.py"


def test_fig21_script_writes_csv_and_plot(tmp_path, capsys):
    spec = importlib.util.spec_from_file_location("ramp_fig21_electrical", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    frame = module.main(["--out", str(tmp_path), "--quick"])
    written = pd.read_csv(tmp_path / "fig21_electrical.csv")
    assert (tmp_path / "fig21_electrical.png").stat().st_size > 10_000
    assert len(written) == len(frame) == 4 * 4 * 3
    top = written[written.num_gpus == written.num_gpus.max()]
    for size in top.size_bytes.unique():
        at_size = top[top.size_bytes == size].set_index("algorithm").time_s
        assert at_size["ring"] > at_size["torus2d"] >= at_size["hierarchical"]
    assert "RAMP 8.4 statements" in capsys.readouterr().out
