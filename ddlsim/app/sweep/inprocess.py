"""Run a whole ``ddlsim -m ...`` sweep inside this process, with the same rows as the CLI.

    frame = run_sweep(["experiment=ramp_megatron"])

This is the documented loop over `ddlsim.compose()` (see `ddlsim.app.runner`): the sweep is
expanded as Hydra's basic sweeper does (config ``hydra.sweeper.params`` first, then the given
overrides; the last value of a key wins; `ddlsim.app.sweep.callbacks.expand_sweep`), and every job's config
is composed and run with `ddlsim.run_point`, so a point that cannot run is a row with its
status. Composing costs about 0.1 s, so each distinct set of group choices (``fabric=ramp``,
...) is composed once and plain value overrides (``model.target_loss=2.0``) are applied to a
copy. Rows are labelled from the composed config itself, so they equal the command line's; the
result adds the ``job`` and ``overrides`` columns of a gathered sweep. Only Hydra's public
compose API is used. Scripts, tests and benchmarks use this (`ddlsim.app.sweep.reproduce`);
``ddlsim -m`` remains the way to run sweeps in parallel, on a cluster, or resumably.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence

import pandas as pd
from hydra import compose as hydra_compose
from hydra import initialize_config_dir
from hydra.core.override_parser.overrides_parser import OverridesParser
from omegaconf import DictConfig, open_dict

from ddlsim.app.config_store import config_dir, register_configs, register_sweeper
from ddlsim.app.group_objects import GroupObjects
from ddlsim.app.runner import run_point
from ddlsim.app.sweep.callbacks import expand_sweep
from ddlsim.app.sweep.compose import apply_values, is_plain_value
from ddlsim.report.gather import job_identity
from ddlsim.report.results import rows_to_frame


def _compose(overrides: Sequence[str]) -> DictConfig:
    """The config of `overrides` with its ``hydra`` node (for the sweeper's params)."""
    register_configs()
    register_sweeper()
    with initialize_config_dir(config_dir=str(config_dir()), version_base="1.3", job_name="ddlsim"):
        return hydra_compose(config_name="config", overrides=list(overrides), return_hydra_config=True)


def sweep_config(overrides: Sequence[str]) -> DictConfig:
    """The config shared by every job of the sweep: `overrides` without their sweeps."""
    parsed = OverridesParser.create().parse_overrides(list(overrides))
    return _compose([item.input_line for item in parsed if not item.is_sweep_override()])


def sweep_points(overrides: Sequence[str]) -> list[list[str]]:
    """The overrides of every job ``ddlsim -m <overrides>`` would launch, in job order."""
    params = sweep_config(overrides).hydra.sweeper.get("params") or {}
    return expand_sweep([f"{key}={value}" for key, value in params.items()] + list(overrides))


def job_config(point: Sequence[str], cache: dict[tuple[str, ...], DictConfig] | None = None) -> DictConfig:
    """The composed config of one job (without its ``hydra`` node), as ``ddlsim <point>`` composes it."""
    cache = {} if cache is None else cache
    parsed = OverridesParser.create().parse_overrides(list(point))
    values = [item for item in parsed if is_plain_value(item)]
    structural = tuple(item.input_line for item in parsed if not is_plain_value(item))
    if structural not in cache:
        composed = _compose(structural)
        with open_dict(composed):
            del composed["hydra"]
        cache[structural] = composed
    config = copy.deepcopy(cache[structural])
    apply_values(config, values)
    return config


def run_sweep(overrides: Sequence[str], *, progress: Callable[[int, int, list[str]], None] | None = None
              ) -> pd.DataFrame:
    """Run every job of the sweep in order; rows led by ``job`` and ``overrides`` columns."""
    points = sweep_points(overrides)
    cache: dict[tuple[str, ...], DictConfig] = {}
    objects = GroupObjects()
    rows = []
    for job, point in enumerate(points):
        result = run_point(job_config(point, cache), objects=objects)
        for row in result.rows:
            rows.append({"job": str(job), "overrides": " ".join(job_identity(point)), **row})
        if progress is not None:
            progress(job + 1, len(points), point)
    return rows_to_frame(rows)

