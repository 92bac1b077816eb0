"""Compose once per sweep: a Hydra config loader that composes each set of group choices once.

Hydra's basic sweeper composes every job twice (once to check the batch, once to launch it), and
a composition of ddlsim's config costs about 0.3 s, most of it building the defaults list and
deep-copying nodes. A job's overrides are mostly plain values (``model.target_loss=2.0``) on top
of a few group choices (``fabric=ramp``), and a plain value cannot change the defaults list. So
`ComposeOnceLoader` composes each distinct set of group choices (and ``hydra.*``, ``+key``,
``~key`` overrides) once with Hydra's own loader, and gives each job a copy of it with the job's
values applied as composition applies them (`apply_values`: `OmegaConf.update` in struct mode,
the same errors), and the ``hydra.overrides.task`` and ``hydra.job.override_dirname`` that
composition records. A bad value fails as in a full composition, naming the override, before
any job runs, because the sweeper checks every job's config first; the config checked for a job
is handed to the launcher for that job, so each job costs one copy. Only public Hydra and
OmegaConf APIs are used; `tests/test_sweep_compose.py` holds every job's config equal to Hydra's
full composition of it.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Sequence
from typing import Any

from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.core.override_parser.types import Override
from hydra.errors import ConfigCompositionException
from omegaconf import DictConfig, OmegaConf, open_dict
from omegaconf.errors import ConfigAttributeError, ConfigKeyError, OmegaConfBaseException

from ddlsim.app.config_store import GROUPS, config_dir


@functools.lru_cache(maxsize=256)
def is_group(key: str) -> bool:
    """A config group (``fabric``, ``experiment``, ``hydra/launcher``, a folder of ``configs/``), not a value key."""
    return (key in GROUPS or key in ("experiment", "assumptions") or key.startswith("hydra") or "/" in key
            or (config_dir() / key).is_dir())


def is_plain_value(override: Override) -> bool:
    """A ``key=value`` override of a config value: no group choice, ``hydra.*``, ``+``, ``~`` or package."""
    return (override.package is None and not override.is_add() and not override.is_force_add()
            and not override.is_delete() and not override.is_sweep_override() and not override.is_hydra_override()
            and not is_group(override.key_or_group))


def apply_values(config: DictConfig, values: Sequence[Override]) -> None:
    """Apply plain value overrides as Hydra's composition does: merged in struct mode, so an unknown
    key or a value of the wrong type fails with the exception (and cause) composition raises."""
    for item in values:
        try:
            OmegaConf.update(config, item.key_or_group, item.value(), merge=True)
        except (ConfigAttributeError, ConfigKeyError) as error:
            raise ConfigCompositionException(f"Could not override '{item.key_or_group}'.\n"
                                             f"To append to your config use +{item.input_line}") from error
        except OmegaConfBaseException as error:
            raise ConfigCompositionException(f"Error merging override {item.input_line}") from error


def override_dirname(overrides: Sequence[Override], node: Any) -> str:
    """``hydra.job.override_dirname`` (Hydra's documented rule): the overrides but `node`'s
    ``exclude_keys``, sorted, joined by ``item_sep``, with ``kv_sep`` for ``=``."""
    lines = sorted(item.input_line for item in overrides if item.key_or_group not in node.exclude_keys)
    return node.item_sep.join(lines).replace("=", node.kv_sep)


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

    def load_sweep_config(self, master_config: DictConfig, sweep_overrides: list[str]) -> DictConfig:
        """The job's config; the first call for a job (the sweeper's check) keeps it for the second (the launch)."""
        key = tuple(sweep_overrides)
        config = self._checked.pop(key, None)
        if config is None:
            config = self._checked[key] = self._compose(master_config, list(sweep_overrides))
        return config

    def _compose(self, master_config: DictConfig, sweep_overrides: list[str]) -> DictConfig:
        parsed = OverridesParser.create().parse_overrides(sweep_overrides)
        values = [item for item in parsed if is_plain_value(item)]
        if not values:
            return self._loader.load_sweep_config(master_config, sweep_overrides)
        structural = [item.input_line for item in parsed if not is_plain_value(item)]
        base = self._bases.get(tuple(structural))
        if base is None:
            base = self._bases[tuple(structural)] = self._loader.load_sweep_config(master_config, structural)
        config = copy.deepcopy(base)
        apply_values(config, values)
        hydra_overrides = OmegaConf.to_container(master_config.hydra.overrides.hydra)
        assert isinstance(hydra_overrides, list)
        task = [item for item in OverridesParser.create().parse_overrides([*hydra_overrides, *sweep_overrides])
                if not item.is_hydra_override()]
        with open_dict(config.hydra):
            config.hydra.overrides.task = [item.input_line for item in task]
            config.hydra.job.override_dirname = override_dirname(task, config.hydra.job.config.override_dirname)
        OmegaConf.copy_cache(from_config=master_config, to_config=config)
        return config
