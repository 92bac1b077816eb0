"""A capture entry that fails at import, or a program that exits instead of returning: one line
naming the file and line (the entry) or the function (the step), never a traceback or a silent exit 0;
in a ``-m`` sweep the job is recorded as failed, the sweep goes on and ends with a non-zero status."""

from __future__ import annotations

import os
import signal
import sys
import textwrap
import time

import pandas as pd
import pytest
import torch

import ddlsim
from ddlsim.app.cli import EXIT_INVALID, main
from ddlsim.core.errors import ConfigError, ProgramExitError

GOOD_BUILD = textwrap.dedent("""
    import torch


    def build(mesh):
        model = torch.nn.Linear(4, 4)

        def step():
            model(torch.randn(2, 4)).sum().backward()

        return step
""")
EXITING_BUILD = GOOD_BUILD.replace("backward()\n", "backward()\n        raise SystemExit(0)\n")
BAD_IMPORTS = {
    "syntax": ("import torch\nvalue = (\n", "SyntaxError: '(' was never closed", 2),
    "name": ("import torch\n\nundefined_name + 1\n", "NameError: name 'undefined_name' is not defined", 3),
    "exit": ("import sys\nsys.exit(3)\n", "SystemExit: sys.exit(3) at import", 2),
}


def _entry_file(directory, name: str, text: str):
    path = directory / f"{name}.py"
    path.write_text(text)
    return path


@pytest.mark.parametrize("case", sorted(BAD_IMPORTS))
@pytest.mark.parametrize("form", ["file", "module"])
def test_an_entry_that_fails_at_import_names_its_file_and_line(tmp_path, monkeypatch, case, form):
    text, message, line = BAD_IMPORTS[case]
    name = f"entry_{case}_{form}"
    path = _entry_file(tmp_path, name, text)
    monkeypatch.chdir(tmp_path)  # the current directory is importable, as for python -m
    entry = f"{path}:build" if form == "file" else f"{name}:build"
    with pytest.raises(ConfigError) as caught:
        ddlsim.capture(entry, [2], ["dp"])
    text = str(caught.value)
    assert "\n" not in text and text.startswith(f"entry = {entry!r}: cannot import "), text
    assert message in text and f"{path}:{line}" in text, text
    sys.modules.pop(name, None)


def _exiting_build(stop):
    def build(mesh):
        model = torch.nn.Linear(4, 4)

        def step():
            model(torch.randn(2, 4)).sum().backward()
            stop()

        return step

    return build


class Stop(BaseException):
    """A program's own BaseException, like KeyboardInterrupt, that is no Exception."""


def _raise(error):
    def stop():
        raise error

    return stop


@pytest.mark.parametrize(("stop", "how"), [
    (lambda: sys.exit(0), "called sys.exit(0)"),
    (lambda: sys.exit("done"), "called sys.exit('done')"),
    (_raise(KeyboardInterrupt()), "raised KeyboardInterrupt"),
    (_raise(Stop()), "raised Stop"),
], ids=["exit0", "exit_text", "keyboard_interrupt", "base_exception"])
def test_a_step_that_exits_is_an_error_naming_the_step(stop, how):
    with pytest.raises(ProgramExitError) as caught:
        ddlsim.capture(_exiting_build(stop), [2], ["dp"])
    text = str(caught.value)
    assert "\n" not in text and text.startswith("step = ") and "build.<locals>.step" in text, text
    assert how in text and "test_program_exits.py:" in text and "instead of returning" in text, text
    assert isinstance(caught.value, ConfigError)


def test_a_build_function_that_exits_is_an_error_naming_the_build():
    def build(mesh):
        sys.exit(1)

    with pytest.raises(ProgramExitError, match=r"^build = .*build'?: called sys\.exit\(1\) at .*test_program_exits"):
        ddlsim.capture(build, [2], ["dp"])


def test_the_command_line_ends_a_step_exit_with_one_line_and_a_failing_status(tmp_path, capsys):
    path = _entry_file(tmp_path, "exits", EXITING_BUILD)
    status = main(["model=program", f"model.entry={path}:build", "model.mesh_shape=[2]", "model.mesh_dim_names=[dp]",
                   f"hydra.run.dir={tmp_path / 'run'}"])
    lines = capsys.readouterr().err.strip().splitlines()
    assert status == EXIT_INVALID and len(lines) == 1, lines
    assert lines[0].startswith("ddlsim: error: step = ") and f"called sys.exit(0) at {path}:" in lines[0], lines
    assert not (tmp_path / "run" / "results.csv").exists()


def test_a_sweep_records_the_exiting_job_as_failed_and_goes_on(tmp_path, capsys):
    good = _entry_file(tmp_path, "good", GOOD_BUILD)
    exiting = _entry_file(tmp_path, "exiting", EXITING_BUILD)
    sweep = tmp_path / "sweep"
    status = main(["-m", "model=program", f"model.entry={exiting}:build,{good}:build", "model.mesh_shape=[2]",
                   "model.mesh_dim_names=[dp]", f"hydra.sweep.dir={sweep}"])
    err = capsys.readouterr().err.strip().splitlines()
    assert status == EXIT_INVALID, err
    assert err[-1].startswith("ddlsim: error: sweep = ") and "1 job(s) failed, e.g. job 0: step = " in err[-1], err
    rows = pd.read_csv(sweep / "results.csv")
    assert len(rows) == 2
    assert rows["status"].iloc[0].startswith("failed: step = ") and rows["status"].iloc[1] == "ok"


@pytest.mark.skipif(signal.getsignal(signal.SIGINT) is not signal.default_int_handler,
                    reason="SIGINT is not Python's default handler in this process (a test worker)")
def test_a_real_ctrl_c_still_interrupts_the_capture():
    def stop():
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(5)  # the signal arrives first

    with pytest.raises(KeyboardInterrupt):
        ddlsim.capture(_exiting_build(stop), [2], ["dp"])
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # the watch put it back
