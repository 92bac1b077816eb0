"""The `ddlsim` command: a thin `@hydra.main` around `ddlsim.run`.

A problem ends the command with one line on stderr and a non-zero exit status, before any work
where it can be known in advance:

- exit 2, ``ddlsim: error: <key> = <value>: <rule>``: invalid input (an unknown key or option, a
  bad value, a value without a unit, an output path that cannot be written);
- exit 3, ``ddlsim: infeasible: <reason>``: a legal single run that cannot be done (the model
  does not fit, the group is larger than the fabric). No result file is written.

A reader that stops reading (``ddlsim --help | head``) ends the command quietly with exit 141,
the status of a process that SIGPIPE stopped.

Inside a sweep (``-m``) a point that cannot run is a row with its ``status`` instead, and the
sweep goes on (`ddlsim.app.runner.run_point`). Set DDLSIM_DEBUG=1 (or HYDRA_FULL_ERROR=1) to see the full
traceback, with the library error it came from chained as its cause.

`main(argv)` may be called in-process (tests do): it returns the exit status and, given `argv`,
leaves Hydra's global state (`GlobalHydra`, the `HydraConfig` singleton) as it found it, through
Hydra's public `Singleton.get_state` / `set_state`.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path

import hydra
from hydra.core.global_hydra import GlobalHydra
from hydra.core.hydra_config import HydraConfig
from hydra.core.singleton import Singleton
from hydra.errors import HydraException
from hydra.types import RunMode
from omegaconf import DictConfig
from omegaconf.errors import OmegaConfBaseException

from ddlsim.app.arguments import normalise_arguments
from ddlsim.app.caller_errors import PATH_ERRORS, describe_error
from ddlsim.app.config_store import config_dir, register_configs, register_sweeper
from ddlsim.app.group_objects import JOB_OBJECTS
from ddlsim.app.help import help_overrides, render_help
from ddlsim.app.runner import run, run_point
from ddlsim.app.sweep.callbacks import SweepAborted, clear_job_marker, job_finished, mark_job_finished
from ddlsim.core.errors import DdlsimError, InfeasibleError, debug_enabled
from ddlsim.core.files import check_writable_files
from ddlsim.report.results import result_names, write_results

EXIT_INVALID = 2
EXIT_INFEASIBLE = 3
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE, as a shell reports a writer whose reader left


class _SingleRunFailure:
    """The error that ended a single run, handed from the job to `main` (raising it from the job
    would make Hydra print a line of its own first)."""

    error: DdlsimError | None = None


def _job(config: DictConfig) -> None:
    hydra_config = HydraConfig.get()
    output_dir = Path(hydra_config.runtime.output_dir)
    overrides = list(hydra_config.overrides.task)
    in_sweep = hydra_config.mode == RunMode.MULTIRUN
    names = result_names(csv=config.output.csv, parquet=config.output.parquet, collectives=True)
    if not in_sweep:
        try:
            check_writable_files(output_dir, names, "hydra.run.dir")
            result = run(config, output_dir=output_dir)
        except DdlsimError as error:
            _SingleRunFailure.error = error
            return
    else:
        check_writable_files(output_dir, names, "hydra.sweep.dir")
        if config.output.resume and job_finished(output_dir, overrides):
            print(f"ddlsim: job {output_dir.name} already finished, skipped: {' '.join(overrides)}")
            return
        clear_job_marker(output_dir)
        result = run_point(config, output_dir=output_dir, objects=JOB_OBJECTS)
    frame = result.frame()
    written = write_results(frame, output_dir, csv=config.output.csv, parquet=config.output.parquet,
                            collectives=result.collectives_frame())
    if in_sweep:
        mark_job_finished(output_dir, overrides, rows=len(frame), job=hydra_config.job.num, files=written)
    elif config.output.summary:
        print(result.summary)
        for path in written:
            print(f"wrote {path}")


def _report(error: BaseException) -> int:
    cause = error.__cause__ if isinstance(error, HydraException) and error.__cause__ else error
    if isinstance(cause, InfeasibleError):
        print(f"ddlsim: infeasible: {describe_error(cause)}", file=sys.stderr)
        return EXIT_INFEASIBLE
    print(f"ddlsim: error: {describe_error(error)}", file=sys.stderr)
    return EXIT_INVALID


def _drop_stdout() -> None:
    """Point stdout at /dev/null, so that the interpreter's last flush does not fail on the closed pipe too."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):  # stdout is no file (captured in-process)
        pass


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line `argv` (default: ``sys.argv[1:]``); return the exit status."""
    register_configs()
    register_sweeper()
    arguments = normalise_arguments(sys.argv[1:] if argv is None else argv)
    show_traceback = os.environ.get("HYDRA_FULL_ERROR") == "1" or debug_enabled()
    # In-process callers get Hydra's singletons back as they were (as Hydra's own test fixture
    # does it); the console script, which exits afterwards, skips the copy (about 0.15 s).
    saved_state = Singleton.get_state() if argv is not None else None
    saved_argv, saved_env = sys.argv, os.environ.get("HYDRA_FULL_ERROR")
    # Hydra re-raises instead of printing its multi-line report, so we can print one line.
    os.environ["HYDRA_FULL_ERROR"] = "1"
    sys.argv = [saved_argv[0] if saved_argv else "ddlsim", *arguments]
    entry = hydra.main(version_base="1.3", config_path=str(config_dir()), config_name="config")(_job)
    _SingleRunFailure.error = None
    try:
        overrides = help_overrides(arguments)
        text = render_help(overrides) if overrides is not None else None
        if text is not None:  # the same text as Hydra's --help, without its 4 s of group listing
            print(text)
            sys.stdout.flush()
            return 0
        entry()
        if _SingleRunFailure.error is not None:
            raise _SingleRunFailure.error
        sys.stdout.flush()
        return 0
    except BrokenPipeError:
        _drop_stdout()
        return EXIT_BROKEN_PIPE
    except SystemExit as exit_:  # --help, --info and Hydra's own argument errors
        if isinstance(exit_.code, str):
            print(exit_.code, file=sys.stderr)
        return exit_.code if isinstance(exit_.code, int) else (0 if exit_.code is None else 1)
    except SweepAborted as aborted:
        if show_traceback:
            raise aborted.error from None
        return _report(aborted.error)
    except (DdlsimError, HydraException, OmegaConfBaseException, ValueError, *PATH_ERRORS) as error:
        # ValueError: what Hydra raises for some malformed overrides (``=3``)
        if show_traceback:
            raise
        return _report(error)
    finally:
        sys.argv = saved_argv
        if saved_env is None:
            os.environ.pop("HYDRA_FULL_ERROR", None)
        else:
            os.environ["HYDRA_FULL_ERROR"] = saved_env
        if GlobalHydra.instance().is_initialized():
            GlobalHydra.instance().clear()
        if saved_state is not None:
            Singleton.set_state(saved_state)
        _SingleRunFailure.error = None


if __name__ == "__main__":
    sys.exit(main())
