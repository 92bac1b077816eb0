"""One config, one row, whichever door it comes through (issue 13, "One way to run").

Rows are labelled from the composed config itself (a YAML variant carries its own ``label``),
never from Hydra's global state, so `ddlsim.run`, the command line, the in-process sweep and a
joblib sweep write byte-identical rows; and no module uses Hydra's private API.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pandas as pd

import ddlsim
from ddlsim.app.cli import main
from ddlsim.app.sweep.inprocess import run_sweep
from ddlsim.report.results import write_results

ROOT = Path(__file__).resolve().parents[1]
# A YAML variant of a fabric (its label differs from its registered name) and of a model.
CONFIG = ["experiment=single", "fabric=superpod_1to1", "model=megatron_gpt", "model.target_loss=2.4"]


def test_one_config_gives_byte_identical_rows_through_every_door(tmp_path, capsys):
    library = write_results(ddlsim.run(CONFIG).frame(), tmp_path / "library", parquet=False)[0].read_bytes()
    assert b"superpod_1to1" in library and b"megatron_gpt" in library

    assert main([*CONFIG, f"hydra.run.dir={tmp_path / 'cli'}"]) == 0
    assert (tmp_path / "cli" / "results.csv").read_bytes() == library

    in_process = run_sweep([*CONFIG[:-1], "model.target_loss=2.4,2.5"]).drop(columns=["job", "overrides"])
    assert write_results(in_process.iloc[:1], tmp_path / "in_process", parquet=False)[0].read_bytes() == library

    sweep_dir = tmp_path / "joblib"
    assert main(["-m", "hydra/launcher=local_parallel", "hydra.launcher.n_jobs=2", *CONFIG[:-1],
                 "model.target_loss=2.4,2.5", "report.plots=false", f"hydra.sweep.dir={sweep_dir}"]) == 0
    assert "Joblib.Parallel(n_jobs=2" in "".join(capsys.readouterr())
    assert (sweep_dir / "0" / "results.csv").read_bytes() == library
    gathered = pd.read_csv(sweep_dir / "results.csv")
    assert list(gathered["fabric"]) == ["superpod_1to1"] * 2 and list(gathered["model"]) == ["megatron_gpt"] * 2


def test_every_yaml_variant_labels_its_rows_with_its_own_name():
    for group in ("fabric", "model"):
        for path in sorted((ROOT / "configs" / group).glob("*.yaml")):
            config = ddlsim.compose(["experiment=single", f"{group}={path.stem}"])
            assert config[group].label == path.stem, path


def test_no_module_uses_hydras_private_api():
    private = "hydra" + "._internal"  # spelled in two parts, so that this file does not match itself
    found = subprocess.run(["git", "grep", "-l", private], cwd=ROOT, capture_output=True, text=True)
    assert found.returncode == 1 and found.stdout == ""  # git grep: 1 = no match
