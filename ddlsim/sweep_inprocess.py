"""Run a whole ``ddlsim -m ...`` sweep inside this process, fast, with the same rows as the CLI.

    frame = run_sweep(["experiment=ramp_megatron"])

The sweep is expanded exactly as Hydra's basic sweeper does (config ``hydra.sweeper.params``
first, then the given overrides; the last value of a key wins). Composing a config costs about
0.1 s, so each distinct set of group choices (``fabric=ramp``, ...) is composed once and plain
value overrides (``model.target_loss=2.0``) are applied to a copy. Each job sees the Hydra
config of its own composition (choices included), as under ``ddlsim -m``, so its rows match
the command line's; the result adds the ``job`` and ``overrides`` columns of a gathered sweep.
Scripts and benchmarks use this; ``ddlsim -m`` remains the way to run sweeps in parallel or on
a cluster.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from typing import Any

import pandas as pd
from hydra import compose as hydra_compose
from hydra import initialize_config_dir
from hydra.core.global_hydra import GlobalHydra
from hydra.core.hydra_config import HydraConfig
from hydra.core.override_parser.overrides_parser import OverridesParser
from omegaconf import DictConfig, OmegaConf, open_dict

from ddlsim.config_store import GROUPS, config_dir, register_configs
from ddlsim.report.results import rows_to_frame
from ddlsim.runner import run

_GROUP_KEYS = frozenset((*GROUPS, "experiment"))


def _compose(overrides: Sequence[str]) -> DictConfig:
    register_configs()
    if GlobalHydra.instance().is_initialized():
        return hydra_compose(config_name="config", overrides=list(overrides), return_hydra_config=True)
    with initialize_config_dir(config_dir=str(config_dir()), version_base="1.3", job_name="ddlsim"):
        return hydra_compose(config_name="config", overrides=list(overrides), return_hydra_config=True)


def sweep_config(overrides: Sequence[str]) -> DictConfig:
    """The config shared by every job of the sweep: `overrides` without their sweeps."""
    parsed = OverridesParser.create().parse_overrides(list(overrides))
    return _compose([item.input_line for item in parsed if not item.is_sweep_override()])


def expand_sweep(overrides: Sequence[str]) -> list[list[str]]:
    """The overrides of every job ``ddlsim -m <overrides>`` would launch, in job order."""
    from hydra._internal.core_plugins.basic_sweeper import BasicSweeper

    parser = OverridesParser.create()
    base = sweep_config(overrides)
    params = base.hydra.sweeper.get("params") or {}
    arguments = [f"{key}={value}" for key, value in params.items()] + list(overrides)
    batches = BasicSweeper.split_arguments(parser.parse_overrides(arguments), None)
    return [list(job) for batch in batches for job in batch]


def _is_group(key: str) -> bool:
    """A config group (``fabric``, ``ramp_table10``, ``hydra/launcher``), not a value key."""
    return key in _GROUP_KEYS or key.startswith("hydra") or (config_dir() / key).is_dir()


def _is_plain_value(override: Any) -> bool:
    return (not _is_group(override.key_or_group) and override.package is None and not override.is_add()
            and not override.is_delete())


def _job_config(point: Sequence[str], cache: dict[tuple[str, ...], DictConfig]) -> DictConfig:
    parsed = OverridesParser.create().parse_overrides(list(point))
    values = [item for item in parsed if _is_plain_value(item)]
    structural = tuple(item.input_line for item in parsed if not _is_plain_value(item))
    if structural not in cache:
        cache[structural] = _compose(structural)
    config = copy.deepcopy(cache[structural])
    with open_dict(config.hydra):
        config.hydra.overrides.task = list(point)
    for item in values:
        OmegaConf.update(config, item.key_or_group, item.value(), merge=True)
    return config


def run_sweep(overrides: Sequence[str], *, progress: Callable[[int, int, list[str]], None] | None = None
              ) -> pd.DataFrame:
    """Run every job of the sweep in order; rows led by ``job`` and ``overrides`` columns."""
    points = expand_sweep(overrides)
    cache: dict[tuple[str, ...], DictConfig] = {}
    rows = []
    for job, point in enumerate(points):
        config = _job_config(point, cache)
        HydraConfig.instance().set_config(config)
        job_config = copy.deepcopy(config)
        with open_dict(job_config):
            del job_config["hydra"]
        try:
            result = run(job_config)
        finally:
            HydraConfig.instance().cfg = None  # type: ignore[assignment]
        for row in result.rows:
            rows.append({"job": str(job), "overrides": " ".join(point), **row})
        if progress is not None:
            progress(job + 1, len(points), point)
    return rows_to_frame(rows)


def reproduce_main(experiment: str, description: str, argv: Sequence[str] | None = None) -> int:
    """Command line of the reproduction scripts: run ``experiment=<experiment>`` and report it.

    ``python scripts/<script>.py [--out DIR] [override ...]`` runs the experiment's sweep in
    this process, writes results.csv/.parquet, side_by_side.csv and figures/ under DIR
    (default ``reproductions/<experiment>``), and prints the summary and side-by-side tables.
    Extra overrides narrow or change the sweep (``fabric=ramp,superpod``).
    """
    import argparse
    import sys
    import time
    from pathlib import Path

    from tqdm import tqdm

    from ddlsim.errors import DdlsimError
    from ddlsim.report.make import make_report
    from ddlsim.sweep import report_settings

    parser = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=Path("reproductions") / experiment,
                        help=f"output directory (default: reproductions/{experiment})")
    parser.add_argument("overrides", nargs="*", help="extra config overrides, e.g. fabric=ramp,superpod")
    args = parser.parse_args(argv)
    overrides = [f"experiment={experiment}", *args.overrides]
    started = time.perf_counter()
    try:
        with tqdm(desc=experiment, unit="job", leave=False, disable=None) as bar:
            def progress(done: int, total: int, point: list[str]) -> None:
                bar.total = total
                bar.update(1)
                bar.set_postfix_str(" ".join(point)[-60:])

            frame = run_sweep(overrides, progress=progress)
    except DdlsimError as error:
        print(f"{Path(sys.argv[0]).name}: error: {error}", file=sys.stderr)
        return 2
    elapsed = time.perf_counter() - started
    settings = report_settings(sweep_config(overrides))
    report = make_report(frame, args.out, settings)
    print(report.text)
    print(f"\n{len(frame)} rows from {frame['job'].nunique()} jobs in {elapsed:.1f} s")
    for path in report.paths:
        print(f"wrote {path}")
    return 0
