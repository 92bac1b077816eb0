"""A sweep's jobs run in this process (`ddlsim.app.sweep.launch`) write what Hydra's basic launcher writes.

The same sweep runs twice through the command line's entry in this process: once through
`launch_in_process` (what the ddlsim sweeper does for Hydra's basic launcher) and once through
Hydra's own `BasicLauncher` and `run_job`. Every file of the two sweep directories is compared
byte for byte (job results, done markers, ``.hydra/`` files, job logs, gathered results, figures),
with the sweep directory's own name written the same way, and so is the printed output but for
its timestamps and elapsed times.
"""

from __future__ import annotations

import re

import ddlsim.app.sweep.launch as launch
from ddlsim.app.cli import main

SWEEP = ["-m", "experiment=single", "fabric=ideal,ramp", "model.target_loss=2.5,1.0"]  # 1.0 is infeasible
ONLY_TIMES = ".ddlsim_sweep.json"  # the sweep's start time


def _run(capsys, sweep_dir, monkeypatch, *, hydra_launcher: bool):
    if hydra_launcher:
        monkeypatch.setattr(launch, "runs_in_process", lambda config: False)
    capsys.readouterr()
    assert main([*SWEEP, f"hydra.sweep.dir={sweep_dir}"]) == 0
    monkeypatch.undo()
    out = capsys.readouterr().out
    out = re.sub(r"\[\d{4}-\d\d-\d\d [\d:,]+\]", "[TIME]", out)
    out = re.sub(r"\(\d+m\d\ds elapsed[^)]*\)", "(ELAPSED)", out)
    return out.replace(str(sweep_dir), "SWEEP_DIR")


def _files(sweep_dir):
    return {path.relative_to(sweep_dir).as_posix(): path.read_bytes().replace(str(sweep_dir).encode(), b"SWEEP_DIR")
            for path in sorted(sweep_dir.rglob("*")) if path.is_file() and path.name != ONLY_TIMES}


def test_the_in_process_launch_writes_what_hydras_basic_launcher_writes(tmp_path, capsys, monkeypatch):
    # the same directory name under two parents, so that paths written into files compare equal
    ours_dir, hydras_dir = tmp_path / "ours" / "sweep", tmp_path / "hydras" / "sweep"
    ours_out = _run(capsys, ours_dir, monkeypatch, hydra_launcher=False)
    hydras_out = _run(capsys, hydras_dir, monkeypatch, hydra_launcher=True)
    ours, hydras = _files(ours_dir), _files(hydras_dir)
    assert sorted(ours) == sorted(hydras)
    assert {"0/.hydra/config.yaml", "0/.hydra/hydra.yaml", "0/.hydra/overrides.yaml", "0/results.csv",
            "3/results.csv", "results.csv"} <= set(ours)
    for name in ours:
        assert ours[name] == hydras[name], name
    assert ours_out == hydras_out
    assert "Launching 4 jobs locally" in ours_out and "[4/4]" in ours_out


def test_only_hydras_basic_launcher_is_replaced():
    from omegaconf import OmegaConf

    assert launch.runs_in_process(OmegaConf.create({"hydra": {"launcher": {"_target_": launch.BASIC_LAUNCHER}}}))
    joblib = "hydra_plugins.hydra_joblib_launcher.joblib_launcher.JoblibLauncher"
    assert not launch.runs_in_process(OmegaConf.create({"hydra": {"launcher": {"_target_": joblib}}}))
