"""`ddlsim.Session`: many configurations from Python, composing once and reusing what they share.

    session = ddlsim.Session(["experiment=single", "fabric=ramp"])
    for loss in (2.5, 2.2, 2.0):
        rows += session.run([f"model.target_loss={loss}"]).rows

``session.run(overrides)`` returns what ``ddlsim.run([*base_overrides, *overrides])`` returns,
and raises the same `ConfigError` / `InfeasibleError` (``session.run_point`` is `ddlsim.run_point`).
Each distinct set of group choices (``fabric=superpod``, ``+key=...``) is composed with Hydra
once; plain values (``model.target_loss=2.0``) are applied to a copy with Hydra's own override
code (`ddlsim.sweep_compose.apply_values`), so they fail as a composition would. Every group's
object (model, parallel layout, device, fabric, collective algorithm, task, compute model) is
built once per distinct config of that group and reused, so a fabric's and the compute model's
caches and the collective estimator's schedules and prices carry over from one configuration to
the next. A group is rebuilt whenever an override names it, a chosen assumption set other than
``faithful`` may rewrite it, or its config holds an interpolation.
"""

from __future__ import annotations

import copy
import functools
import os
from collections.abc import Callable, Sequence
from typing import Any

from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.core.override_parser.types import Override
from omegaconf import DictConfig, OmegaConf

from ddlsim.assumptions import FAITHFUL, assumptions_name
from ddlsim.config_store import config_dir
from ddlsim.errors import ConfigError, InfeasibleError
from ddlsim.runner import assemble_components, compose, run_components, run_point
from ddlsim.sweep_compose import apply_values, is_plain_value
from ddlsim.tasks.base import Components, TaskResult

# Groups whose object is also built from another group's config.
_ALSO_READS = {"compute": ("device",)}


@functools.lru_cache(maxsize=4096)
def _parse(override: str) -> Override:
    return OverridesParser.create().parse_override(override)


def _is_group(key: str) -> bool:
    """A config group (``fabric``, ``experiment``, ``hydra/launcher``), not a value key."""
    return key.startswith("hydra") or _group_dir(key)


@functools.lru_cache(maxsize=256)
def _group_dir(key: str) -> bool:
    from ddlsim.config_store import GROUPS

    return key in GROUPS or key in ("experiment", "assumptions") or (config_dir() / key).is_dir()


def _touches(override: Override, group: str) -> bool:
    key = override.key_or_group
    return key == group or key.startswith(group + ".")


class _Base:
    """One composed config (a set of group choices) and the group objects built from it."""

    def __init__(self, overrides: Sequence[str]) -> None:
        self.config = compose(list(overrides))
        plain = OmegaConf.to_container(self.config, resolve=False)
        assert isinstance(plain, dict)
        self.interpolated = {str(key) for key, node in plain.items() if "${" in str(node)}
        self.built: dict[tuple[str, tuple[str, ...]], Any] = {}


class Session:
    """Run configurations that share `base_overrides`, reusing compositions, objects and caches."""

    def __init__(self, base_overrides: Sequence[str] = ()) -> None:
        self.base_overrides = list(base_overrides)
        self._bases: dict[tuple[str, ...], _Base] = {}

    def _split(self, overrides: Sequence[str]) -> tuple[_Base, list[Override]]:
        parsed = [_parse(item) for item in [*self.base_overrides, *overrides]]
        for item in parsed:
            if item.is_sweep_override():
                raise ConfigError(item.key_or_group, item.input_line.partition("=")[2],
                                  "a Session runs one configuration per call; loop over the values")
        values = [item for item in parsed if is_plain_value(item, _is_group)]
        structural = tuple(item.input_line for item in parsed if not is_plain_value(item, _is_group))
        base = self._bases.get(structural)
        if base is None:
            base = self._bases[structural] = _Base(structural)
        return base, values

    def config(self, overrides: Sequence[str] = ()) -> DictConfig:
        """The composed config of ``[*base_overrides, *overrides]``, equal to `ddlsim.compose` of them."""
        base, values = self._split(overrides)
        config = copy.deepcopy(base.config)
        if values:
            apply_values(config, values)
        return config

    def components(self, overrides: Sequence[str] = (), *,
                   output_dir: str | os.PathLike[str] | None = None) -> Components:
        """`ddlsim.build_components` of the configuration, with unchanged groups' objects reused."""
        base, values = self._split(overrides)
        config = copy.deepcopy(base.config)
        if values:
            apply_values(config, values)
        reusable = assumptions_name(config) == FAITHFUL and not any(_touches(item, "assumptions") for item in values)

        def build(group: str, make: Callable[[], Any]) -> Any:
            groups = (group, *_ALSO_READS.get(group, ()))
            if not reusable or base.interpolated.intersection(groups):
                return make()
            key = (group, tuple(item.input_line for item in values if any(_touches(item, g) for g in groups)))
            if key not in base.built:
                base.built[key] = make()
            return base.built[key]

        return assemble_components(config, build, output_dir=output_dir)

    def run(self, overrides: Sequence[str] = (), *, output_dir: str | os.PathLike[str] | None = None) -> TaskResult:
        """`ddlsim.run` of ``[*base_overrides, *overrides]``: rows and summary, or `ConfigError` / `InfeasibleError`."""
        return run_components(self.components(overrides, output_dir=output_dir))

    def run_point(self, overrides: Sequence[str] = (), *,
                  output_dir: str | os.PathLike[str] | None = None) -> TaskResult:
        """`ddlsim.run_point`: a configuration that cannot run is a row with its ``status``."""
        try:
            return self.run(overrides, output_dir=output_dir)
        except (ConfigError, InfeasibleError):
            return run_point(self.config(overrides), output_dir=output_dir)
