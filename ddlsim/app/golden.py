"""The golden CSV of the default experiment: how it is produced and where it lives.

`run_default_experiment` runs `ddlsim` with no overrides but the sweep directory (a fresh
process, as a user would) and returns the gathered results.csv. tests/test_end_to_end.py compares
it byte for byte with `GOLDEN`; ``python scripts/regenerate_golden.py`` rewrites `GOLDEN` from it
(never edit the file by hand).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

GOLDEN = Path(__file__).resolve().parents[2] / "tests" / "golden" / "default_experiment.csv"


def run_default_experiment(workdir: Path) -> Path:
    """Run `ddlsim` with no overrides but the sweep directory; return the gathered CSV."""
    sweep_dir = workdir / "sweep"
    command = [sys.executable, "-m", "ddlsim.app.cli", f"hydra.sweep.dir={sweep_dir}"]
    result = subprocess.run(command, cwd=workdir, capture_output=True, text=True, timeout=900)
    if result.returncode != 0:
        raise RuntimeError(f"ddlsim failed ({result.returncode}):\n{result.stdout}\n{result.stderr}")
    return sweep_dir / "results.csv"


def regenerate_golden(golden: Path = GOLDEN) -> Path:
    """Rewrite `golden` from a fresh run of the default experiment."""
    with tempfile.TemporaryDirectory() as scratch:
        produced = run_default_experiment(Path(scratch))
        golden.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(produced, golden)
    return golden
