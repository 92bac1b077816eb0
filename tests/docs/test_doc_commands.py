"""Every command line in README.md and docs/*.md runs as printed, from an empty directory.

Each block of commands (`doc_blocks` says how blocks are found and marked) runs in its own empty
directory, with ``../shared`` beside it and the checkout's ``scripts/``, ``benchmarks/`` and
``examples/`` linked in (the docs run those from a checkout); lines run in order, so a block may use the files its
earlier lines wrote. Every command must exit with the block's status, and printed outputs shown
in the docs must match, numbers within 2 %. Blocks marked slow run with ``-m slow``.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.docs.doc_blocks import ROOT, DocBlock, doc_blocks, doc_files, missing_lines

RELATIVE_TOLERANCE = 0.02
COMMAND_TIMEOUT_S = 900
SLOW_COMMAND_TIMEOUT_S = 2400  # the longest, the capture validation of 109 rows, took over 900 s at load 6-9
_CHECKOUT_DIRS = ("scripts", "benchmarks", "examples")


def _all_blocks() -> list[DocBlock]:
    return [block for path in doc_files() for block in doc_blocks(path)]


def _params(slow: bool) -> list:
    return [pytest.param(block, id=block.id, marks=([pytest.mark.skip(reason=block.skip_reason)]
                                                     if block.skip_reason else []))
            for block in _all_blocks() if block.slow == slow]


def _sandbox(tmp_path: Path) -> Path:
    work = tmp_path / "work"
    work.mkdir()
    shared = ROOT.parent / "shared"
    if shared.is_dir():
        (tmp_path / "shared").symlink_to(shared)
    for name in _CHECKOUT_DIRS:
        (work / name).symlink_to(ROOT / name)
    return work


def _environment() -> dict[str, str]:
    environment = dict(os.environ)
    environment["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), environment.get("PYTHONPATH")]))
    environment["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), environment.get("PATH", "")])
    environment.pop("DDLSIM_DEBUG", None)
    return environment


def _run(block: DocBlock, tmp_path: Path) -> None:
    timeout_s = SLOW_COMMAND_TIMEOUT_S if block.slow else COMMAND_TIMEOUT_S
    work = _sandbox(tmp_path)
    environment = _environment()
    for command in block.commands:
        completed = subprocess.run(["bash", "-c", command.line], cwd=work, env=environment, capture_output=True,
                                   text=True, timeout=timeout_s)
        shown = (completed.stdout + completed.stderr)[-2000:]
        assert completed.returncode == block.exit_status, (
            f"{block.id}: `{command.line}` exited {completed.returncode}, the docs expect "
            f"{block.exit_status}:\n{shown}")
        actual = (completed.stdout + completed.stderr).splitlines()
        missing = missing_lines(command.expected_output, actual, RELATIVE_TOLERANCE)
        listed = "\n".join(missing)
        assert not missing, (f"{block.id}: `{command.line}` did not print these documented lines (numbers within "
                             f"{RELATIVE_TOLERANCE:.0%}):\n{listed}\n--- it printed:\n{shown}")


@pytest.mark.parametrize("block", _params(slow=False))
def test_documented_commands_run_as_printed(block: DocBlock, tmp_path: Path) -> None:
    _run(block, tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize("block", _params(slow=True))
def test_documented_slow_commands_run_as_printed(block: DocBlock, tmp_path: Path) -> None:
    _run(block, tmp_path)
