"""The `ddlsim` command: a thin `@hydra.main` around `ddlsim.run`.

Config problems end in one line on stderr naming the key and the rule, and exit status 2.
Set HYDRA_FULL_ERROR=1 to see the full traceback instead.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import hydra
from hydra.core.hydra_config import HydraConfig
from hydra.errors import HydraException, MissingConfigException
from hydra.types import RunMode
from omegaconf import DictConfig
from omegaconf.errors import OmegaConfBaseException

from ddlsim.config_store import config_dir, register_configs
from ddlsim.errors import DdlsimError
from ddlsim.registry import omegaconf_error_to_config_error
from ddlsim.report.results import write_results
from ddlsim.runner import run
from ddlsim.sweep import job_finished, mark_job_finished


def _job(config: DictConfig) -> None:
    hydra_config = HydraConfig.get()
    output_dir = Path(hydra_config.runtime.output_dir)
    overrides = list(hydra_config.overrides.task)
    in_sweep = hydra_config.mode == RunMode.MULTIRUN
    if in_sweep and config.output.resume and job_finished(output_dir, overrides):
        print(f"ddlsim: job {output_dir.name} already finished, skipped: {' '.join(overrides)}")
        return
    try:
        result = run(config)
    except DdlsimError as error:
        if os.environ.get(_TRACEBACK_FLAG) == "1":
            raise
        # Exiting here, rather than raising, keeps Hydra from adding its own multi-line report.
        print(f"ddlsim: error: {describe_error(error)}", file=sys.stderr)
        sys.exit(2)
    frame = result.frame()
    written = write_results(frame, output_dir, csv=config.output.csv, parquet=config.output.parquet)
    if in_sweep:
        mark_job_finished(output_dir, overrides, rows=len(frame))
    elif config.output.summary:
        print(result.summary)
        for path in written:
            print(f"wrote {path}")


def describe_error(error: BaseException) -> str:
    """One line for a config or composition error: what was given, where, and the rule."""
    if isinstance(error, MissingConfigException) and error.missing_cfg_file:
        group, _, option = error.missing_cfg_file.rpartition("/")
        choices = ", ".join(sorted(error.options or []))
        if group:
            return f"{group}={option}: no such option in group '{group}'; choose one of {choices}"
        return str(error).splitlines()[0]
    cause = error.__cause__ if isinstance(error, HydraException) else error
    if isinstance(cause, OmegaConfBaseException):
        return str(omegaconf_error_to_config_error(cause, ""))
    if isinstance(cause, DdlsimError):
        return str(cause).splitlines()[0]
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    return "; ".join(lines[:3]) if lines else type(error).__name__


_TRACEBACK_FLAG = "DDLSIM_TRACEBACK"


def main() -> None:
    register_configs()
    show_traceback = os.environ.get("HYDRA_FULL_ERROR") == "1"
    os.environ[_TRACEBACK_FLAG] = "1" if show_traceback else "0"
    # Hydra re-raises instead of printing its multi-line report, so we can print one line.
    os.environ["HYDRA_FULL_ERROR"] = "1"
    entry = hydra.main(version_base="1.3", config_path=str(config_dir()), config_name="config")(_job)
    try:
        entry()
    except (DdlsimError, HydraException, OmegaConfBaseException) as error:
        if show_traceback:
            raise
        print(f"ddlsim: error: {describe_error(error)}", file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main()
