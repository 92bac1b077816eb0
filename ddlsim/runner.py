"""`ddlsim.run(config)`: the whole run as a library call, with or without Hydra.

`compose()` builds the same config the command line would; `build_components()` validates
every group and builds its object (cheap: constructors only parse and check); `run()` hands
the components to the chosen task.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from hydra import compose as hydra_compose
from hydra import initialize_config_dir
from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from ddlsim.compute.model import ComputeConfig, ComputeModel
from ddlsim.config_store import GROUPS, RootConfig, config_dir, register_configs
from ddlsim.errors import ConfigError
from ddlsim.registry import ALGORITHMS, DEVICES, FABRICS, MODELS, TASKS, omegaconf_error_to_config_error
from ddlsim.tasks.base import Components, TaskResult
from ddlsim.training.settings import training_settings
from ddlsim.workload.parallel import ParallelConfig


def compose(overrides: Sequence[str] = (), config_name: str = "config") -> DictConfig:
    """The config `ddlsim <overrides>` would run, composed without starting a Hydra app."""
    register_configs()
    with initialize_config_dir(config_dir=str(config_dir()), version_base="1.3", job_name="ddlsim"):
        return hydra_compose(config_name=config_name, overrides=list(overrides))


def _as_root(config: DictConfig | Mapping[str, Any] | Sequence[str] | None) -> DictConfig:
    if config is None:
        return compose()
    if isinstance(config, (list, tuple)):
        return compose(config)
    if isinstance(config, DictConfig):
        return config
    if isinstance(config, Mapping):
        register_configs()
        try:
            return OmegaConf.merge(OmegaConf.structured(RootConfig), dict(config))
        except OmegaConfBaseException as error:
            raise omegaconf_error_to_config_error(error, "") from None
    raise ConfigError("config", type(config).__name__, "must be a DictConfig, a mapping or a list of overrides")


def _parallel(node: Any) -> ParallelConfig:
    try:
        merged = OmegaConf.merge(OmegaConf.structured(ParallelConfig), node)
        return OmegaConf.to_object(merged)
    except OmegaConfBaseException as error:
        raise omegaconf_error_to_config_error(error, "parallel") from None
    except ConfigError as error:
        raise error.under("parallel") from None


def _compute(node: Any, device: Any) -> ComputeModel:
    try:
        merged = OmegaConf.merge(OmegaConf.structured(ComputeConfig), node)
        return ComputeModel.from_config(OmegaConf.to_object(merged), device)
    except OmegaConfBaseException as error:
        raise omegaconf_error_to_config_error(error, "compute") from None
    except ConfigError as error:
        raise error.under("compute") from None


def build_components(config: DictConfig | Mapping[str, Any] | Sequence[str] | None = None) -> Components:
    """Validate every config group and build its object; raises `ConfigError` naming the key."""
    root = _as_root(config)
    for group in GROUPS:
        if OmegaConf.is_missing(root, group):
            raise ConfigError(group, "???", "is required; choose an option of this group")
    device = DEVICES.build(root.device)
    training_settings(root.training)  # validated here; the train task reads it from `config`
    return Components(
        config=root,
        model=MODELS.build(root.model),
        parallel=_parallel(root.parallel),
        device=device,
        fabric=FABRICS.build(root.fabric),
        algorithm=ALGORITHMS.build(root.collective),
        task=TASKS.build(root.task),
        compute=_compute(root.compute, device),
    )


def run(config: DictConfig | Mapping[str, Any] | Sequence[str] | None = None) -> TaskResult:
    """Run one configuration and return its rows and summary; writes no files.

    `config` may be a composed config, a plain mapping of groups, a list of command-line
    overrides (``["fabric=ideal", "task.sizes=[1GB]"]``) or None for the default.
    """
    components = build_components(config)
    return components.task.run(components)
