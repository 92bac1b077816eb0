"""`ddlsim.Session`: many configurations from Python, composing once and reusing what they share.

    session = ddlsim.Session(["experiment=single", "fabric=ramp"])
    for loss in (2.5, 2.2, 2.0):
        rows += session.run([f"model.target_loss={loss}"]).rows

``session.run(overrides)`` returns what ``ddlsim.run([*base_overrides, *overrides])`` returns,
and raises the same `ConfigError` / `InfeasibleError` (``session.run_point`` is `ddlsim.run_point`);
one string is one override (``session.run("model.layers=2")``). A bad override raises the
`ConfigError` whose message is the line the command prints for it (`ddlsim.app.caller_errors`).
Each distinct set of group choices (``fabric=superpod``, ``+key=...``) is composed with Hydra
once. A configuration whose plain values all set scalar fields of groups (``parallel.data=16``)
sets them on the typed nodes of one working copy and hands the task a plain copy of the config
(`ddlsim.app.working_config.WorkingConfig.with_leaves`): no node copy, no OmegaConf merge, and the
structural checks (missing groups, unread groups, the assumption set's effect) ran once for the
composition. Any other value is applied to the working copy as composition applies it
(`with_values`), so it fails as a composition would. Every group's object (model, parallel layout,
device, fabric, collective algorithm, task, compute model) is built once per distinct set of
overrides of that group and reused, so a fabric's and the compute model's caches and the
collective estimator's schedules and prices carry over from one configuration to the next; a
scalar change of a registry group or of ``parallel`` replaces that field of the validated schema
instance (its checks run again) instead of an OmegaConf merge. A group is built afresh for each
configuration under an assumption set other than ``faithful`` (it may rewrite groups) and when
its config holds an interpolation. A Session is not thread-safe.
"""

from __future__ import annotations

import dataclasses
import functools
import os
from collections.abc import Callable, Sequence
from typing import Any

from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.core.override_parser.types import Override
from omegaconf import DictConfig, OmegaConf

from ddlsim.app.assumptions import FAITHFUL, apply_assumptions, assumptions_name
from ddlsim.app.caller_errors import caller_errors, override_list
from ddlsim.app.group_objects import ALSO_READS
from ddlsim.app.override_lines import simple_override
from ddlsim.app.runner import assemble_components, compose, failed_point, run_components, section
from ddlsim.app.sweep.compose import is_plain_value
from ddlsim.app.working_config import WorkingConfig
from ddlsim.core.errors import ConfigError, InfeasibleError
from ddlsim.core.registry import LABEL_KEY, REGISTRIES
from ddlsim.tasks.base import Components, TaskResult
from ddlsim.workload.parallel import ParallelConfig


@functools.cache
def _parser() -> OverridesParser:
    """Hydra's override parser; it keeps no state between parses (each builds its own lexer and tree),
    and making one registers the grammar's functions, which costs about a third of a parse."""
    return OverridesParser.create()


@functools.lru_cache(maxsize=4096)
def _classify(override: str) -> tuple[Override, bool]:
    """The parsed override and whether it is a plain value (not a group choice, ``+``, ``~``, ``hydra.*``)."""
    parsed = simple_override(override) or _parser().parse_overrides([override])[0]  # Hydra's message for a bad one
    if parsed.is_sweep_override():
        raise ConfigError(parsed.key_or_group, override.partition("=")[2],
                          "a Session runs one configuration per call; loop over the values")
    return parsed, is_plain_value(parsed)


# Schema sections outside the registries whose scalar fields `_Base.build_typed` replaces.
_SECTIONS: dict[str, Callable[[Any], Any]] = {"parallel": lambda node: section(node, ParallelConfig, "parallel")}


def _touches(override: Override, group: str) -> bool:
    key = override.key_or_group
    return key == group or key.startswith(group + ".")


class _Base:
    """One composed config (a set of group choices), its working copy (`WorkingConfig`) and the
    group objects built from it."""

    def __init__(self, overrides: Sequence[str]) -> None:
        self.config = compose(list(overrides))
        plain = OmegaConf.to_container(self.config, resolve=False)
        assert isinstance(plain, dict)
        self.interpolated = {str(key) for key, node in plain.items() if "${" in str(node)}
        self.built: dict[tuple[str, tuple[str, ...]], Any] = {}
        self.typed: dict[str, Any] = {}  # each registry group's validated schema instance, unchanged
        self.keys_checked = False
        self.structure_checked = False  # a configuration of this base passed every structural check
        self.working = WorkingConfig(self.config)
        # Under `faithful` with no overlay, scalar values cannot make an assumption overlay apply.
        self.overlay_free = (assumptions_name(self.config) == FAITHFUL
                             and apply_assumptions(self.config) is self.config)

    def build_typed(self, group: str, config: DictConfig, values: Sequence[Override]) -> Any:
        """`group`'s object when `values` only set scalar fields of its typed node: the unchanged
        schema instance with those fields replaced (its checks run again), without OmegaConf's
        merge; None where that does not apply."""
        registry = REGISTRIES.get(group)
        node = config[group]
        schema = OmegaConf.get_type(node)
        fields = [item.key_or_group.partition(".")[2] for item in values]
        if group in _SECTIONS:
            return self._replaced_section(group, node, fields)
        if (registry is None or not dataclasses.is_dataclass(schema) or not all(fields)
                or any("." in name or name in ("name", LABEL_KEY) for name in fields)):
            return None
        changed = {name: node[name] for name in fields}
        if any(OmegaConf.is_config(value) for value in changed.values()):
            return None
        if group not in self.typed:
            self.typed[group] = registry.validate(self.config[group], key=group)
        try:
            instance = dataclasses.replace(self.typed[group], **changed)
        except ConfigError as error:
            raise error.under(group) from None
        except (TypeError, ValueError):  # a field replace cannot set: the full validation says what is wrong
            return None
        try:
            return registry.entry(instance.name).build(instance)
        except ConfigError as error:
            raise error.under(group) from None


    def _replaced_section(self, group: str, node: DictConfig, fields: list[str]) -> Any:
        """A schema section's instance (``parallel``) with scalar fields replaced; its checks run again."""
        if not all(fields) or any("." in name for name in fields):
            return None
        changed = {name: node[name] for name in fields}
        if any(OmegaConf.is_config(value) for value in changed.values()):
            return None
        if group not in self.typed:
            self.typed[group] = _SECTIONS[group](self.config[group])
        try:
            return dataclasses.replace(self.typed[group], **changed)
        except ConfigError as error:
            raise error.under(group) from None
        except (TypeError, ValueError):
            return None


class Session:
    """Run configurations that share `base_overrides`, reusing compositions, objects and caches."""

    def __init__(self, base_overrides: Sequence[str] | str = (), *, max_compositions: int | None = None) -> None:
        """`max_compositions`: how many sets of group choices to keep composed (the least recently
        used is dropped); None keeps every one."""
        self.base_overrides = override_list(base_overrides, "base_overrides")
        self.max_compositions = max_compositions
        self._bases: dict[tuple[str, ...], _Base] = {}

    def _split(self, overrides: Sequence[str]) -> tuple[_Base, list[Override]]:
        classified = [_classify(item) for item in (*self.base_overrides, *override_list(overrides))]
        values = [parsed for parsed, plain in classified if plain]
        structural = tuple(parsed.input_line for parsed, plain in classified if not plain)
        base = self._bases.pop(structural, None)
        if base is None:
            base = _Base(structural)
        self._bases[structural] = base  # the most recently used last
        if self.max_compositions is not None and len(self._bases) > self.max_compositions:
            del self._bases[next(iter(self._bases))]
        return base, values

    def config(self, overrides: Sequence[str] | str = ()) -> DictConfig:
        """The composed config of ``[*base_overrides, *overrides]``, equal to `ddlsim.compose` of them."""
        with caller_errors():
            base, values = self._split(overrides)
            return base.working.copy_with(values)

    def components(self, overrides: Sequence[str] | str = (), *,
                   output_dir: str | os.PathLike[str] | None = None) -> Components:
        """`ddlsim.build_components` of the configuration, with unchanged groups' objects reused."""
        return self._components(overrides, output_dir, working=False)

    def _components(self, overrides: Sequence[str] | str, output_dir: str | os.PathLike[str] | None, *,
                    working: bool) -> Components:
        with caller_errors():  # Hydra's and OmegaConf's exceptions about the overrides, as the CLI words them
            base, values = self._split(overrides)
            leaves = base.working.with_leaves(values) if working and base.overlay_free else None
            if leaves is not None:
                config = leaves
            else:
                config = base.working.with_values(values) if working else base.working.copy_with(values)
        # Set fields never touch the assumption set (`WorkingConfig`), and `overlay_free` means faithful.
        reusable = leaves is not None or (assumptions_name(config) == FAITHFUL
                                          and not any(_touches(item, "assumptions") for item in values))

        value_groups = [item.key_or_group.partition(".")[0] for item in values]  # what `_touches` compares

        def reuse(group: str, make: Callable[[], Any]) -> Any:
            groups = (group, *ALSO_READS.get(group, ()))
            if not reusable or base.interpolated.intersection(groups):
                return make()
            changes = [item for item, name in zip(values, value_groups, strict=True) if name in groups]
            key = (group, tuple(item.input_line for item in changes))
            if key not in base.built:
                typed = base.build_typed(group, config, changes) if changes else None
                base.built[key] = make() if typed is None else typed
            return base.built[key]

        # Plain values cannot add a key (Hydra refuses them in struct mode), so once a composition
        # passed `check_known_keys`, every config made from it does.
        structure_checked = leaves is not None and base.structure_checked
        components = assemble_components(config, reuse, output_dir=output_dir, check_keys=not base.keys_checked,
                                         structure_checked=structure_checked,
                                         plain=base.working.plain if leaves is not None else None)
        base.keys_checked = True
        # Scalar fields set on their nodes change no group choice, option name or label and no assumption,
        # so once one such configuration of an overlay-free base passed the structural checks, every one does.
        base.structure_checked = base.structure_checked or leaves is not None
        return components

    def run(self, overrides: Sequence[str] | str = (), *,
            output_dir: str | os.PathLike[str] | None = None) -> TaskResult:
        """`ddlsim.run` of ``[*base_overrides, *overrides]``: rows and summary, or `ConfigError` / `InfeasibleError`.

        The run's config is the session's working copy (see `_Base`): a Session is not thread-safe.
        """
        return run_components(self._components(overrides, output_dir, working=True))

    def run_point(self, overrides: Sequence[str] | str = (), *,
                  output_dir: str | os.PathLike[str] | None = None) -> TaskResult:
        """`ddlsim.run_point`: a configuration that cannot run is a row with its ``status``."""
        try:
            return self.run(overrides, output_dir=output_dir)
        except (ConfigError, InfeasibleError) as error:
            return failed_point(self.config(overrides), error)
