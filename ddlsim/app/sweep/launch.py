"""The jobs of a sweep, one after another in this process, without two of Hydra's per-job config copies.

Hydra's basic launcher runs each job through `hydra.core.utils.run_job`, which, besides the copy
of the job's config the sweeper's check made, copies its ``hydra`` node three times (twice into the
`HydraConfig` singleton, before and after it learns the job's output directory, and once more for
the ``.hydra/hydra.yaml`` it saves) and the whole config once (the task's, without ``hydra``).

`launch_in_process` does what the basic launcher and `run_job` do, in the same order, with the same
log lines, callbacks, output directories, ``.hydra/`` files and job log files, and two copies
fewer: the `HydraConfig` singleton is set once and told the output directory in place, and
``hydra.yaml`` is written from it rather than from a copy of it. The ddlsim sweeper uses it where
the sweep's launcher is Hydra's basic one; any other launcher (joblib, SLURM, Ray) runs as before.
`tests/app/test_sweep_launch_in_process.py` holds the sweep directory equal, file by file, to the one
Hydra's own launcher writes.
"""

from __future__ import annotations

import contextlib
import copy
import logging
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hydra.core.hydra_config import HydraConfig
from hydra.core.utils import (
    JobReturn,
    JobRuntime,
    JobStatus,
    configure_log,
    env_override,
    filter_overrides,
    setup_globals,
)
from hydra.types import HydraContext, TaskFunction
from omegaconf import DictConfig, OmegaConf, open_dict, read_write

# The basic launcher's logger, so that its two log lines read as before.
log = logging.getLogger("hydra._internal.core_plugins.basic_launcher")

BASIC_LAUNCHER = "hydra._internal.core_plugins.basic_launcher.BasicLauncher"


def runs_in_process(config: DictConfig) -> bool:
    """True where the sweep's launcher is Hydra's basic one (every job in this process, in order)."""
    return str(OmegaConf.select(config, "hydra.launcher._target_", default="")) == BASIC_LAUNCHER


def launch_in_process(config: DictConfig, hydra_context: HydraContext, task_function: TaskFunction,
                      job_overrides: Sequence[Sequence[str]], initial_job_idx: int) -> list[JobReturn]:
    """The basic launcher's `launch`: each job's config from the context's loader, then `run_job_in_process`."""
    setup_globals()
    configure_log(config.hydra.hydra_logging, config.hydra.verbose)
    Path(str(config.hydra.sweep.dir)).mkdir(parents=True, exist_ok=True)
    log.info(f"Launching {len(job_overrides)} jobs locally")
    runs = []
    for index, overrides in enumerate(job_overrides, start=initial_job_idx):
        log.info(f"\t#{index} : {' '.join(filter_overrides(overrides))}")
        job_config = hydra_context.config_loader.load_sweep_config(config, list(overrides))
        with open_dict(job_config):
            job_config.hydra.job.id = index
            job_config.hydra.job.num = index
        runs.append(run_job_in_process(job_config, hydra_context, task_function))
        configure_log(config.hydra.hydra_logging, config.hydra.verbose)
    return runs


def _set_output_dir(config: DictConfig, output_dir: str) -> None:
    with read_write(config.hydra.runtime), open_dict(config.hydra.runtime):
        config.hydra.runtime.output_dir = output_dir


def run_job_in_process(config: DictConfig, hydra_context: HydraContext, task_function: TaskFunction) -> JobReturn:
    """`hydra.core.utils.run_job` of one sweep job (``hydra.sweep.dir``/``hydra.sweep.subdir``), two copies fewer."""
    callbacks = hydra_context.callbacks
    old_cwd = os.getcwd()
    singleton = HydraConfig.instance()
    previous = singleton.cfg
    singleton.set_config(config)  # the output directory may interpolate ${hydra:...}
    output_dir = os.path.join(str(OmegaConf.select(config, "hydra.sweep.dir")),
                              str(OmegaConf.select(config, "hydra.sweep.subdir")))
    _set_output_dir(config, os.path.abspath(output_dir))
    hydra_cfg = singleton.cfg
    assert isinstance(hydra_cfg, DictConfig)
    _set_output_dir(hydra_cfg, os.path.abspath(output_dir))  # what a second set_config would copy
    chdir = False
    try:
        ret = JobReturn()
        task_cfg = copy.deepcopy(config)
        with read_write(task_cfg), open_dict(task_cfg):
            del task_cfg["hydra"]
        ret.cfg = task_cfg
        ret.hydra_cfg = hydra_cfg
        overrides = OmegaConf.to_container(config.hydra.overrides.task)
        assert isinstance(overrides, list)
        ret.overrides = overrides
        Path(output_dir).mkdir(parents=True, exist_ok=True)
        chdir = hydra_cfg.hydra.job.chdir is True  # None is false from version_base 1.2 on (ddlsim's is 1.3)
        if chdir:
            os.chdir(output_dir)
            ret.working_dir = output_dir
        else:
            ret.working_dir = os.getcwd()
        configure_log(config.hydra.job_logging, config.hydra.verbose)
        if config.hydra.output_subdir is not None:
            hydra_output = Path(config.hydra.runtime.output_dir) / Path(config.hydra.output_subdir)
            _save_config(task_cfg, "config.yaml", hydra_output)
            _save_config(hydra_cfg, "hydra.yaml", hydra_output)
            _save_config(config.hydra.overrides.task, "overrides.yaml", hydra_output)
        with env_override(hydra_cfg.hydra.job.env_set):
            callbacks.on_job_start(config=config, task_function=task_function)
            try:
                ret.return_value = task_function(task_cfg)
                ret.status = JobStatus.COMPLETED
            except Exception as error:  # as run_job: the sweeper raises it from the job's return
                ret.return_value = error
                ret.status = JobStatus.FAILED
        ret.task_name = JobRuntime.instance().get("name")
        _flush_loggers()
        callbacks.on_job_end(config=config, job_return=ret)
        return ret
    finally:
        singleton.cfg = previous
        if chdir:
            os.chdir(old_cwd)


def _save_config(config: Any, filename: str, output_dir: Path) -> None:
    output_dir.mkdir(parents=True, exist_ok=True)
    with open(output_dir / filename, "w", encoding="utf-8") as file:
        file.write(OmegaConf.to_yaml(config))


def _flush_loggers() -> None:
    loggers = [logging.getLogger(), *(item for item in logging.Logger.manager.loggerDict.values()
                                      if isinstance(item, logging.Logger))]
    for handler in {id(handler): handler for logger in loggers for handler in logger.handlers}.values():
        with contextlib.suppress(Exception):  # as Hydra: a handler that cannot flush does not stop the sweep
            handler.flush()
