"""The root config schema, and its registration with Hydra's ConfigStore.

Every registry entry becomes an option of its group with the schema's defaults
(``fabric=ideal``, ``device=h100_sxm``, ...); YAML files in ``configs/`` add variants on top
of those options and the ``experiment`` group. Because every group is a typed dataclass, an
unknown key or a wrong type fails during composition, before any work starts.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from omegaconf import MISSING

from ddlsim.app.assumptions import AssumptionsConfig
from ddlsim.compute.model import ComputeConfig
from ddlsim.core.options import SCHEMA_OPTIONS
from ddlsim.core.registry import ALL_REGISTRIES
from ddlsim.core.resources import configs_dir, require_configs
from ddlsim.report.settings import ReportSettings
from ddlsim.training.settings import TrainingConfig
from ddlsim.workload.parallel import ParallelConfig

CONFIG_DIR = configs_dir()
ROOT_SCHEMA_NAME = "ddlsim_schema"


@dataclass
class OutputConfig:
    """What a run writes into its output directory."""

    csv: bool = True
    parquet: bool = True
    summary: bool = True
    resume: bool = True  # in a sweep, skip jobs whose verified rows are already in their directory
    replace_sweep: bool = False  # let a sweep directory that holds a different sweep be reused


@dataclass
class NetworkConfig:
    """How the network is shared: `contention` ``on`` lets collectives in flight at the same time
    share the fabric's links, NICs, transceivers and wavelengths (docs/contention.md); ``off``
    prices each alone, as if it had the fabric to itself."""

    contention: str = "on"


@dataclass
class RootConfig:
    model: Any = MISSING
    parallel: Any = MISSING
    device: Any = MISSING
    compute: Any = MISSING
    fabric: Any = MISSING
    collective: Any = MISSING
    task: Any = MISSING
    training: Any = MISSING
    seed: int = 0
    assumptions: AssumptionsConfig = field(default_factory=AssumptionsConfig)
    output: OutputConfig = field(default_factory=OutputConfig)
    network: NetworkConfig = field(default_factory=NetworkConfig)
    report: ReportSettings = field(default_factory=ReportSettings)


GROUPS: tuple[str, ...] = ("model", "parallel", "device", "compute", "fabric", "collective", "task", "training")

_registered = False


def register_configs() -> None:
    """Put the root schema and every registered option into Hydra's ConfigStore (idempotent).

    An option's node is made the first time Hydra loads it (`LazyConfigNode`), so that composing
    ``fabric=ideal`` imports the ideal switch's module and no other fabric's; listing a group's
    options (``--help``, completion, Hydra's "available options") reads only the names."""
    global _registered
    if _registered:
        return
    from hydra.core.config_store import ConfigStore

    from ddlsim.app.lazy_store import lazy_config_node  # Hydra loads only where a config is composed

    store = ConfigStore.instance()
    store.store(name=ROOT_SCHEMA_NAME, node=RootConfig, provider="ddlsim")
    for group, schema in (("parallel", ParallelConfig), ("compute", ComputeConfig), ("training", TrainingConfig)):
        store.store(group=group, name=SCHEMA_OPTIONS[group], node=schema, provider="ddlsim")
    for registry in ALL_REGISTRIES:
        options = store.repo.setdefault(registry.group, {})
        for name in registry.names():
            options[f"{name}.yaml"] = lazy_config_node(registry.group, name)
    _registered = True


def register_sweeper() -> None:
    """Make ddlsim's sweeper known to Hydra through its public ``Plugins.register``. Hydra finds
    plugins by listing the ``hydra_plugins`` namespace, which misses ours under an editable
    install (its modules are mapped by an import hook, not a directory on ``sys.path``). Called
    before every composition that may sweep; registering twice is harmless."""
    from hydra.core.plugins import Plugins

    from hydra_plugins.ddlsim_sweeper import DdlsimBasicSweeper

    Plugins.instance().register(DdlsimBasicSweeper)


@functools.cache
def default_options() -> dict[str, tuple[str, ...]]:
    """The options each group has when the user chooses none: the primary config's defaults list,
    and the default experiment's ``override /<group>: <option>`` entries (the fixed ones, not its sweep)."""
    import yaml

    def choices(path: Path) -> list[tuple[str, str]]:
        document = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        return [(group.removeprefix("override ").removeprefix("/"), str(option))
                for entry in document.get("defaults") or [] if isinstance(entry, dict)
                for group, option in entry.items()]

    primary = choices(config_dir() / "config.yaml")
    options = {group: (option,) for group, option in primary if group in GROUPS}
    experiment = dict(primary).get("experiment")
    for group, option in choices(config_dir() / "experiment" / f"{experiment}.yaml") if experiment else []:
        if group in options and option not in options[group]:
            options[group] += (option,)
    return options


def config_dir() -> Path:
    """Hydra's config directory: the installed ``ddlsim.configs`` package data (see ddlsim.core.resources)."""
    return require_configs()


def group_options() -> dict[str, list[str]]:
    """Every option of every config group, YAML files and registered schemas alike."""
    from hydra import initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    register_configs()
    with initialize_config_dir(config_dir=str(config_dir()), version_base="1.3"):
        loader = GlobalHydra.instance().config_loader()
        return {group: sorted(loader.get_group_options(group)) for group in (*GROUPS, "assumptions", "experiment")}
