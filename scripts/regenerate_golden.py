"""Regenerate tests/golden/default_experiment.csv from the code: run `ddlsim` (the default
experiment) into a scratch directory and copy its gathered results.csv.

    python scripts/regenerate_golden.py

Run it after a change that is meant to alter the default experiment's numbers, and say why in
the commit. Never edit the golden file by hand: tests/test_end_to_end.py compares the CSV of a
fresh run with it byte for byte.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

GOLDEN = Path(__file__).resolve().parents[1] / "tests" / "golden" / "default_experiment.csv"


def run_default_experiment(workdir: Path) -> Path:
    """Run `ddlsim` with no overrides but the sweep directory; return the gathered CSV."""
    sweep_dir = workdir / "sweep"
    command = [sys.executable, "-m", "ddlsim.cli", f"hydra.sweep.dir={sweep_dir}"]
    result = subprocess.run(command, cwd=workdir, capture_output=True, text=True, timeout=900)
    if result.returncode != 0:
        raise RuntimeError(f"ddlsim failed ({result.returncode}):\n{result.stdout}\n{result.stderr}")
    return sweep_dir / "results.csv"


def main() -> int:
    with tempfile.TemporaryDirectory() as scratch:
        produced = run_default_experiment(Path(scratch))
        GOLDEN.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(produced, GOLDEN)
    print(f"wrote {GOLDEN}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
