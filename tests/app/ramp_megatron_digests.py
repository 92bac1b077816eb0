"""SHA-256 of what ``ddlsim experiment=ramp_megatron`` writes that a reader reads: the gathered CSVs
and the figures (PNG and PDF). `tests/app/test_ramp_megatron_bytes.py` compares a fresh run with
the digests stored in ``tests/app/data/ramp_megatron_sha256.json``, which this module wrote by running
the command of the branch's base commit (issue 34: the command made faster, its files byte-identical)::

    PYTHONPATH=<checkout of the base commit> python tests/app/ramp_megatron_digests.py --write
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
import tempfile
from pathlib import Path

STORED = Path(__file__).parent / "data" / "ramp_megatron_sha256.json"
COMMAND = ["experiment=ramp_megatron"]
PATTERNS = ("results.csv", "collectives.csv", "side_by_side.csv", "figures/*.png", "figures/*.pdf")


def digests(sweep_dir: Path) -> dict[str, str]:
    """The SHA-256 of each gathered file of the sweep in `sweep_dir`, by its path inside it."""
    paths = sorted({path for pattern in PATTERNS for path in sweep_dir.glob(pattern)})
    return {path.relative_to(sweep_dir).as_posix(): hashlib.sha256(path.read_bytes()).hexdigest() for path in paths}


def run_sweep(sweep_dir: Path) -> None:
    """``ddlsim experiment=ramp_megatron`` into `sweep_dir`, in a fresh process (the ddlsim on sys.path)."""
    done = subprocess.run([sys.executable, "-m", "ddlsim.app.cli", *COMMAND, f"hydra.sweep.dir={sweep_dir}"],
                          capture_output=True, text=True, cwd=sweep_dir.parent)
    if done.returncode != 0:
        raise RuntimeError(f"ddlsim {' '.join(COMMAND)} failed ({done.returncode}): {done.stderr[-2000:]}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help=f"store the digests in {STORED}")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        sweep_dir = Path(scratch) / "sweep"
        run_sweep(sweep_dir)
        found = digests(sweep_dir)
    text = json.dumps(found, indent=1, sort_keys=True) + "\n"
    if args.write:
        STORED.write_text(text, encoding="utf-8")
    print(text, end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
