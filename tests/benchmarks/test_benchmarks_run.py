"""Every script in benchmarks/ runs to the end at smoke-test sizes, so that none rots unseen.

Each is run as a user runs it (`python benchmarks/<name>.py --tiny`, a fresh process with this
checkout first on the path); the numbers it prints are not checked, only that it exits 0 and
prints something. A script that does not know ``--tiny`` fails here until it learns it (or gets
an entry in ARGUMENTS). Scripts whose tiny run takes more than ~10 s are marked slow.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
BENCHMARKS = REPO / "benchmarks"
HELPERS = {"timing.py"}  # imported by the benchmarks, not one of them
# Scripts sized by their own options (no --tiny flag of theirs).
ARGUMENTS = {
    "bench_chakra.py": ["--repeats", "1", "--no-process"],
    "bench_network.py": ["--ranks", "64", "--repeats", "1"],
    "bench_ramp_megatron.py": ["--repeats", "1"],
    "bench_session.py": ["--losses", "2", "--run-samples", "1", "--repeats", "1"],
}
SLOW = {"bench_capture.py", "bench_chakra.py", "bench_ramp_megatron.py", "bench_startup.py"}  # > 5 s each at tiny sizes
TIMEOUT_S = 600


def scripts() -> list[str]:
    return sorted(path.name for path in BENCHMARKS.glob("*.py") if path.name not in HELPERS)


def _param(name: str):
    return pytest.param(name, marks=pytest.mark.slow) if name in SLOW else name


def test_every_benchmark_is_found() -> None:
    assert {"bench_iteration.py", "bench_search.py", "bench_vtrain_validation.py"} <= set(scripts())


@pytest.mark.parametrize("name", [_param(name) for name in scripts()])
def test_benchmark_runs_at_tiny_sizes(name: str, tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    command = [sys.executable, str(BENCHMARKS / name), *ARGUMENTS.get(name, ["--tiny"])]
    done = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=TIMEOUT_S)
    assert done.returncode == 0, f"{' '.join(command[1:])} failed:\n{done.stdout[-2000:]}\n{done.stderr[-4000:]}"
    assert done.stdout.strip(), f"{name} printed nothing"
