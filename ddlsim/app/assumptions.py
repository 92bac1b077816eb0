"""The `assumptions` group: run ddlsim under a seed paper's modelling choices instead of its own.

``assumptions=faithful`` (the default) changes nothing. The other options
(``configs/assumptions/ramp_paper.yaml``, ``sipac_paper``, ``topoopt_paper``, ``wrht_paper``)
list, per config group, the keys to set on an option of that group, each with a comment citing the
paper's sentence. An overlay is keyed by the option's ``label`` or registered ``name``
(``fabric: {ramp: {switching: ideal}}``), so that one assumption set can serve a sweep over
several fabrics: an option with no entry is left as it is. The overlaid keys then go through the
group's own schema, so a key the schema does not know is a `ConfigError` naming it.

``collective_for_fabric`` replaces the whole ``collective`` node when the fabric's label or name
is listed (a paper's strategy per system: ``{bcube: {name: per_op, ops: {all_to_all: direct},
default: ring}}``); it is applied before the ``collective`` overlay. An entry set to null
replaces nothing (``assumptions.collective_for_fabric.bcube=null``, a what-if).

``parallel`` and ``training`` (sections with one schema) are keyed by the model's name
(``parallel: {megatron: {activation_offload: true}}``): DLRM and Megatron take different
parallelism settings.

Result rows of a run under any option but ``faithful`` carry an ``assumptions`` column. An option
that names none of the run's options in a group its task reads has no effect, and is an error
(`check_assumption_effect`); an entry set to null counts as named, so what-ifs stay legal.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

from omegaconf import DictConfig, OmegaConf, open_dict

from ddlsim.core.errors import ConfigError

FAITHFUL = "faithful"
_BY_OPTION = ("model", "fabric", "collective", "task")
_BY_MODEL = ("parallel", "training")


@dataclass
class AssumptionsConfig:
    """Per group, the keys to set on the options the overlay names (see the module docstring)."""

    name: str = FAITHFUL
    model: dict[str, Any] = field(default_factory=dict)
    fabric: dict[str, Any] = field(default_factory=dict)
    collective: dict[str, Any] = field(default_factory=dict)
    task: dict[str, Any] = field(default_factory=dict)
    parallel: dict[str, Any] = field(default_factory=dict)
    training: dict[str, Any] = field(default_factory=dict)
    collective_for_fabric: dict[str, Any] = field(default_factory=dict)


def _option_keys(node: Any) -> list[str]:
    """The names an overlay may use for this option: its label first, then its registered name."""
    if not isinstance(node, DictConfig):
        return []
    return [str(key) for key in (node.get("label"), node.get("name")) if key]


def _overlay_for(overlays: Any, keys: list[str]) -> Any:
    for key in keys:
        if overlays is not None and key in overlays:
            return overlays[key]
    return None


def assumptions_name(root: Any) -> str:
    """The chosen assumption set of a DictConfig, or of the same config as plain containers."""
    if not OmegaConf.is_config(root):
        return str((root.get("assumptions") or {}).get("name") or FAITHFUL)
    return str(OmegaConf.select(root, "assumptions.name", default=FAITHFUL) or FAITHFUL)


def apply_assumptions(root: DictConfig) -> DictConfig:
    """`root` with the chosen assumption set's keys merged into the groups it names (a copy).

    Returns `root` itself under ``faithful`` or when no overlay applies. The merge is plain
    (no schema): the group's registry validates the result when it builds the option.
    """
    node = root.get("assumptions") if isinstance(root, DictConfig) else None
    if node is None:
        return root
    model_keys = _option_keys(root.get("model"))
    replaced = _overlay_for(node.get("collective_for_fabric"), _option_keys(root.get("fabric")))
    collective = replaced if replaced else root.get("collective")
    changes: dict[str, Any] = {"collective": replaced} if replaced else {}
    for group in _BY_OPTION:
        overlay = _overlay_for(node.get(group), _option_keys(collective if group == "collective" else root.get(group)))
        if overlay:
            changes[group] = _merged(changes[group], overlay) if group in changes else overlay
    for section in _BY_MODEL:
        overlay = _overlay_for(node.get(section), model_keys)
        if overlay:
            changes[section] = overlay
    if not changes:
        return root
    result = copy.deepcopy(root)
    with open_dict(result):
        for group, overlay in changes.items():
            result[group] = overlay if group == "collective" and replaced else _merged(result[group], overlay)
    return result


def _merged(base: Any, overlay: Any) -> DictConfig:
    return OmegaConf.merge(OmegaConf.create(OmegaConf.to_container(base)),
                           OmegaConf.create(OmegaConf.to_container(overlay)))


def _names(overlays: Any, keys: list[str]) -> bool:
    return overlays is not None and any(key in overlays for key in keys)


def addressed_groups(root: DictConfig) -> list[str]:
    """The groups of `root` the chosen assumption set names an entry for (null entries included)."""
    node = root.get("assumptions") if isinstance(root, DictConfig) else None
    if node is None or assumptions_name(root) == FAITHFUL:
        return []
    groups = [group for group in _BY_OPTION if _names(node.get(group), _option_keys(root.get(group)))]
    if _names(node.get("collective_for_fabric"), _option_keys(root.get("fabric"))) and "collective" not in groups:
        groups.append("collective")
    model_keys = _option_keys(root.get("model"))
    return groups + [section for section in _BY_MODEL if _names(node.get(section), model_keys)]


def check_assumption_effect(root: DictConfig, reads: tuple[str, ...], task: str) -> None:
    """Raise `ConfigError` when the assumption set changes nothing task `task` reads (`reads`, and
    its own ``task`` group): the rows would carry its name for results it did not change."""
    name = assumptions_name(root)
    if name == FAITHFUL:
        return
    addressed = addressed_groups(root)
    if any(group in (*reads, "task") for group in addressed):
        return
    node = root["assumptions"]
    offers = "; ".join(f"{section} {', '.join(map(str, node[section]))}"
                       for section in (*_BY_OPTION, *_BY_MODEL, "collective_for_fabric") if node.get(section))
    run = ", ".join(f"{group} {_option_keys(root.get(group))[0]}" for group in ("model", "fabric", "collective")
                    if group in reads and _option_keys(root.get(group)))
    why = (f"it changes {', '.join(addressed)}, which task {task} does not read" if addressed else
           f"it names none of this run's options ({run or 'task ' + task}); it sets {offers}")
    raise ConfigError("assumptions", name, f"has no effect on this run: {why}; leave assumptions at {FAITHFUL}")
