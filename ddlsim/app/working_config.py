"""One working copy of a composed config that each configuration of a `ddlsim.Session` changes in place.

Two ways to apply a configuration's plain values (``key=value`` overrides):

- `with_values` applies them as Hydra's composition does (`ddlsim.app.sweep.compose.apply_values`:
  OmegaConf's merge in struct mode), after copying back from the composed config every top-level
  node the previous configuration changed: any value, any error exactly as composition raises it.
- `with_leaves` sets scalar fields (``model.global_batch=2048``: one group, one field, a value
  that is not a container or an interpolation) directly on their typed value nodes, validated and
  converted by the node as OmegaConf's merge converts them (``"8"`` -> 8 for an int field), and
  puts back the composed values of the fields the previous configuration set and this one does not;
  a field whose override line is the one it holds already is left as it is. No node is copied.
  It returns None where it does not apply or a value does not validate, and leaves the working
  copy as the composed config; the caller then takes `with_values`, which raises the error the
  command line prints.

`tests/test_session_fast_path.py` holds both ways equal to a full composition on a grid of overrides.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

from hydra.core.override_parser.types import Override
from omegaconf import DictConfig, ListConfig, OmegaConf, ValueNode

from ddlsim.app.sweep.compose import apply_values
from ddlsim.core.registry import LABEL_KEY

# Fields whose change alters which option a group is (its row label, the registry entry): composition's path.
_OPTION_FIELDS = ("name", LABEL_KEY)


class WorkingConfig:
    """The composed `config` and a working copy of it, reused from one configuration to the next."""

    def __init__(self, config: DictConfig) -> None:
        self.config = config
        self._working = copy.deepcopy(config)
        self._changed_nodes: set[str] = set()  # top-level nodes `with_values` changed
        self._changed_leaves: dict[tuple[str, str], Any] = {}  # (group, field) -> the composed value
        self._applied: dict[tuple[str, str], str] = {}  # (group, field) -> the override line set on it now
        self._leaf_nodes: dict[tuple[str, str], ValueNode | None] = {}
        # The composed config as plain containers, when it has no interpolation (a set field then changes
        # that field alone); `with_leaves` gives the working copy's as a shallow copy with the fields set.
        self._plain = None if _has_interpolation(config) else OmegaConf.to_container(config, resolve=True)
        self.plain: dict[str, Any] | None = None  # the working copy's, after `with_leaves`

    def copy_with(self, values: Sequence[Override]) -> DictConfig:
        """A fresh copy of the config with `values` applied (composition's path)."""
        config = copy.deepcopy(self.config)
        apply_values(config, values)
        return config

    def with_values(self, values: Sequence[Override]) -> DictConfig:
        """The working copy with `values` applied as composition applies them."""
        self.plain = None
        self._restore_leaves()
        changes = {key for item in values if (key := item.key_or_group.split(".")[0]) in self.config}
        self._changed_nodes |= changes
        for key in self._changed_nodes:
            self._working[key] = self.config[key]  # OmegaConf assigns a copy of the node
        if self._changed_nodes:
            self._leaf_nodes.clear()  # those nodes were replaced
        apply_values(self._working, values)
        self._changed_nodes = changes
        return self._working

    def with_leaves(self, values: Sequence[Override]) -> DictConfig | None:
        """The working copy with `values` set on their typed value nodes; None where that does not
        apply (see the module docstring).

        Only what differs from the previous configuration's leaves is touched: a field whose last
        override is the line set on it last time keeps its node value (a line always converts to the
        same value), a field no longer set gets its composed value back, and a field set twice is set
        in order, so that the first value is checked as composition checks it."""
        last: dict[tuple[str, str], int] = {}
        nodes = []
        for index, item in enumerate(values):
            node = self._leaf_node(item.key_or_group)
            if node is None:
                return None
            value = item.value()
            if isinstance(value, (dict, list)) or (isinstance(value, str) and "${" in value):
                return None
            group, _, field = item.key_or_group.partition(".")
            last[(group, field)] = index
            nodes.append(((group, field), node, value))
        if self._changed_nodes:
            self._restore_leaves()
            for key in self._changed_nodes:
                self._working[key] = self.config[key]
            self._changed_nodes = set()
            self._leaf_nodes.clear()  # the nodes were replaced
            return self.with_leaves(values)
        for key in [key for key in self._applied if key not in last]:
            self._restore_leaf(key)
        for index, (item, (key, node, value)) in enumerate(zip(values, nodes, strict=True)):
            if last[key] == index and self._applied.get(key) == item.input_line:
                continue
            self._changed_leaves.setdefault(key, node._value())
            try:
                node._set_value(value)  # item.value(), converted above: a line always converts alike
            except Exception:  # noqa: BLE001 (any refusal: composition's path raises the CLI's error for it)
                self._restore_leaves()
                return None
            self._applied[key] = item.input_line if last[key] == index else ""
        plain = dict(self._plain) if self._plain is not None else None
        if plain is not None:
            for group in {group for group, _ in last}:
                plain[group] = dict(plain[group])
            for (group, field), index in last.items():
                plain[group][field] = nodes[index][1]._value()
        self.plain = plain
        return self._working

    def _leaf_node(self, key: str) -> ValueNode | None:
        group, _, field = key.partition(".")
        if (group, field) not in self._leaf_nodes:
            self._leaf_nodes[(group, field)] = self._find_leaf(group, field)
        return self._leaf_nodes[(group, field)]

    def _find_leaf(self, group: str, field: str) -> ValueNode | None:
        if not field or "." in field or field in _OPTION_FIELDS:
            return None
        parent = self._working._get_node(group, throw_on_missing_key=False) if group in self._working else None
        if not isinstance(parent, DictConfig) or field not in parent or parent._get_flag("readonly"):
            return None
        node = parent._get_node(field)
        if not isinstance(node, ValueNode) or isinstance(node, (DictConfig, ListConfig)) or node._is_interpolation():
            return None
        return node

    def _restore_leaves(self) -> None:
        for key in list(self._changed_leaves):
            self._restore_leaf(key)
        self._applied = {}

    def _restore_leaf(self, key: tuple[str, str]) -> None:
        """Put back the composed value of the field `key` (group, field) and forget its override line."""
        value = self._changed_leaves.pop(key)
        node = self._leaf_nodes.get(key)
        if node is not None:
            node._set_value(value)
        self._applied.pop(key, None)


def _has_interpolation(config: DictConfig) -> bool:
    return "${" in str(OmegaConf.to_container(config, resolve=False))
