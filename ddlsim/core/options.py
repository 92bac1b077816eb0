"""The YAML variants of a config group, read as the command line composes them.

A variant is a file ``configs/<group>/<name>.yaml`` whose ``defaults`` list names the options it
builds on: a registered name (``superpod``), the group's schema defaults (`SCHEMA_OPTIONS`:
``compute: default``) or another variant (``topoopt_ramp_per_step`` builds on ``topoopt_ramp``).
As in Hydra, the entries are merged in order, ``_self_`` (the file's own settings) last unless the
list places it, and nested mappings merge key by key. `ddlsim.core.registry.build` turns the
settings into a component.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from omegaconf import OmegaConf

from ddlsim.core.errors import ConfigError
from ddlsim.core.resources import config_file

SELF = "_self_"
# Groups typed by one schema rather than a registry: the option holding the schema's defaults
# (registered in Hydra's ConfigStore by `ddlsim.app.config_store`).
SCHEMA_OPTIONS: dict[str, str] = {"parallel": "auto", "compute": "default", "training": "default"}


def variant_names(group: str) -> list[str]:
    """The YAML variants shipped in ``configs/<group>/``."""
    return sorted(path.stem for path in config_file(group).glob("*.yaml"))


def variant_settings(group: str, name: str, registered: Collection[str] = (), *, key: str | None = None,
                     _chain: tuple[str, ...] = ()) -> dict[str, Any] | None:
    """The settings of variant `name` of `group` with its defaults chain resolved, or None when
    ``configs/<group>/<name>.yaml`` does not exist. `registered`: the group's registered names (a
    base among them contributes ``{"name": base}``). Errors name `key` (default: the group)."""
    path = config_file(group, f"{name}.yaml")
    if not path.is_file():
        return None
    where = group if key is None else key
    if name in _chain:
        raise ConfigError(where, name, f"the defaults of {' -> '.join((*_chain, name))} come back to {name!r}")
    document = OmegaConf.to_container(OmegaConf.load(path), resolve=True) or {}
    assert isinstance(document, dict)
    defaults = list(document.pop("defaults", None) or [])
    merged = OmegaConf.create({})
    for entry in defaults if SELF in defaults else [*defaults, SELF]:
        if entry == SELF:
            part: dict[str, Any] | None = document
        elif not isinstance(entry, str):
            raise ConfigError(where, name, f"{path}: defaults entry {entry!r} is not an option of the {group} group")
        elif entry in registered:
            part = {"name": entry}
        elif entry == SCHEMA_OPTIONS.get(group):
            part = {}
        else:
            part = variant_settings(group, entry, registered, key=key, _chain=(*_chain, name))
            if part is None:
                raise ConfigError(where, name, f"{path} builds on {entry!r}, which is neither a registered {group} "
                                               f"option nor a variant in {path.parent}")
        merged = OmegaConf.merge(merged, part)
    settings = OmegaConf.to_container(merged)
    assert isinstance(settings, dict)
    return settings
