"""ConfigStore entries whose node is made on first use: the registered options of ddlsim's groups.

Hydra's `ConfigStore.store` turns a schema into a node at once, so registering every option of
every group imports every fabric, algorithm, model, device and task module (about 50) and builds
about 80 nodes, though one composition reads one option per group. A `LazyConfigNode` is the
`ConfigNode` Hydra's store keeps, with everything but its ``node``: that is made (the option's
module imported, its schema turned into a node exactly as `ConfigStore.store` does) the first time
Hydra reads it, and kept for the next composition. Hydra's `ConfigStore.load` copies the entry and
deep-copies its node, as for any entry; listing options and groups reads only the names.
"""

from __future__ import annotations

import dataclasses
import functools
import typing
from typing import Any

from hydra.core.config_store import ConfigNode
from omegaconf import OmegaConf

from ddlsim.core.registry import REGISTRIES

_PROVIDER = "ddlsim"


def open_mappings(node: Any) -> Any:
    """An option's node with its mapping fields (``dict[str, ...]``: ``task.mix``, ``task.model_overrides``)
    open to keys of the user's choosing, so that ``task.mix={a: 0.5, b: 0.5}`` merges as the docs write it
    (Hydra's struct mode would ask for ``+task.mix=``). The entries' types are still checked; keys of
    the schema itself stay closed."""
    try:
        hints = typing.get_type_hints(type(node))
    except (NameError, TypeError):  # an annotation that does not resolve: leave the node as it is
        return node
    mappings = [item.name for item in dataclasses.fields(node) if typing.get_origin(hints.get(item.name)) is dict]
    if not mappings:
        return node
    config = OmegaConf.structured(node)
    for name in mappings:
        OmegaConf.set_struct(config[name], False)
    return config


@functools.cache
def option_node(group: str, name: str) -> Any:
    """The node of option `name` of `group`, as `ConfigStore.store` would make it (made once)."""
    return OmegaConf.structured(open_mappings(REGISTRIES[group].config_node(name)))


class LazyConfigNode(ConfigNode):
    """A `ConfigNode` whose ``node`` is `option_node` of its group and name, made when first read."""

    def __init__(self, name: str, group: str, option: str) -> None:
        self.name = name
        self.group = group
        self.package = None
        self.provider = _PROVIDER
        self.option = option

    def __getattr__(self, attribute: str) -> Any:  # called only while ``node`` is not set yet
        if attribute != "node" or "option" not in self.__dict__:
            raise AttributeError(attribute)
        self.node = option_node(self.group, self.option)
        return self.node


def lazy_config_node(group: str, name: str) -> LazyConfigNode:
    """The entry of option `name` of `group`, under the file name Hydra's store gives it."""
    return LazyConfigNode(f"{name}.yaml", group, name)
