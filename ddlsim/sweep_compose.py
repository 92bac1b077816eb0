"""Compose once per sweep: a Hydra config loader that composes each set of group choices once.

Hydra's basic sweeper composes every job twice (once to check the batch, once to launch it), and
a composition of ddlsim's config costs about 0.3 s, most of it building the defaults list and
deep-copying nodes. A job's overrides are mostly plain values (``model.target_loss=2.0``) on top
of a few group choices (``fabric=ramp``), and a plain value cannot change the defaults list. So
`ComposeOnceLoader` composes each distinct set of group choices (and ``hydra.*``, ``+key``,
``~key`` overrides) once with Hydra's own loader, and gives each job a copy of it with the job's
values applied by Hydra's own override code, and the ``hydra.overrides.task`` and
``hydra.job.override_dirname`` that composition would have recorded. A bad value fails exactly
as it does in a full composition (the same exception, naming the override), before any job runs,
because the sweeper checks every job's config first. The config checked for a job is handed to
the launcher for that job, so each job costs one copy.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from typing import Any

from hydra._internal.config_loader_impl import ConfigLoaderImpl, get_overrides_dirname
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.core.override_parser.types import Override
from hydra.errors import ConfigCompositionException
from omegaconf import DictConfig, OmegaConf, open_dict
from omegaconf.errors import OmegaConfBaseException


def is_plain_value(override: Override, is_group: Callable[[str], bool]) -> bool:
    """A ``key=value`` override of a config value: no group choice, ``hydra.*``, ``+``, ``~`` or package."""
    return (override.package is None and not override.is_add() and not override.is_force_add()
            and not override.is_delete() and not override.is_sweep_override() and not override.is_hydra_override()
            and not is_group(override.key_or_group))


def apply_values(config: DictConfig, values: Sequence[Override]) -> None:
    """Apply plain value overrides as Hydra's composition does (the same checks, the same errors)."""
    try:
        ConfigLoaderImpl._apply_overrides_to_config(list(values), config)
    except OmegaConfBaseException as error:  # as ConfigLoaderImpl.load_configuration wraps it
        raise ConfigCompositionException().with_traceback(error.__traceback__) from error


class ComposeOnceLoader:
    """Hydra's config loader, with `load_sweep_config` composing each set of group choices once."""

    def __init__(self, loader: Any) -> None:
        self._loader = loader
        self._bases: dict[tuple[str, ...], DictConfig] = {}
        self._checked: dict[tuple[str, ...], DictConfig] = {}

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):  # not delegated (and no recursion before unpickling sets _loader)
            raise AttributeError(name)
        return getattr(self._loader, name)

    def __getstate__(self) -> dict[str, Any]:  # a launcher's worker process composes afresh
        return {"_loader": self._loader, "_bases": {}, "_checked": {}}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)

    def _is_group(self, key: str) -> bool:
        return bool(self._loader.repository.group_exists(key))

    def load_sweep_config(self, master_config: DictConfig, sweep_overrides: list[str]) -> DictConfig:
        """The job's config; the first call for a job (the sweeper's check) keeps it for the second (the launch)."""
        key = tuple(sweep_overrides)
        config = self._checked.pop(key, None)
        if config is None:
            config = self._checked[key] = self._compose(master_config, list(sweep_overrides))
        return config

    def _compose(self, master_config: DictConfig, sweep_overrides: list[str]) -> DictConfig:
        parsed = OverridesParser.create().parse_overrides(sweep_overrides)
        values = [item for item in parsed if is_plain_value(item, self._is_group)]
        if not values:
            return self._loader.load_sweep_config(master_config, sweep_overrides)
        structural = [item.input_line for item in parsed if not is_plain_value(item, self._is_group)]
        base = self._bases.get(tuple(structural))
        if base is None:
            base = self._bases[tuple(structural)] = self._loader.load_sweep_config(master_config, structural)
        config = copy.deepcopy(base)
        apply_values(config, values)
        hydra_overrides = OmegaConf.to_container(master_config.hydra.overrides.hydra)
        assert isinstance(hydra_overrides, list)
        task = [item for item in OverridesParser.create().parse_overrides([*hydra_overrides, *sweep_overrides])
                if not item.is_hydra_override()]
        dirname = config.hydra.job.config.override_dirname
        with open_dict(config.hydra):
            config.hydra.overrides.task = [item.input_line for item in task]
            config.hydra.job.override_dirname = get_overrides_dirname(
                overrides=task, kv_sep=dirname.kv_sep, item_sep=dirname.item_sep, exclude_keys=dirname.exclude_keys)
        OmegaConf.copy_cache(from_config=master_config, to_config=config)
        return config
