"""Which collective algorithms a task runs on the configured fabric, and what rows call them.

A sweep over fabrics often gives every system its own strategies (RAMP-x on RAMP, ring-based
strategies on the electrical fabrics). Tasks take this from a ``collectives`` mapping in their
config: fabric kind (its registered name, e.g. ``superpod``) -> one algorithm config, or a list
of them (``{superpod: [ring, hierarchical], ramp: rampx}``; a config is a name or a mapping with
``name`` and parameters, e.g. ``{name: best, include: [ring, torus2d]}``). A key may also be a
fabric option (a file of configs/fabric/, e.g. ``optical_ring_wrht_fixed``): the row's option is
looked up before its kind. A fabric not in the mapping uses the task's own list, else the
``collective`` group's choice.

Rows name an algorithm by `algorithm_label`: its name, with the parameters that differ from the
schema's defaults (``wrht(m=17)``, ``best(exclude=direct)``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from omegaconf import OmegaConf

from ddlsim.core.errors import ConfigError
from ddlsim.core.registry import ALGORITHMS, FABRICS
from ddlsim.core.types import CollectiveOp


def _plain(node: Any) -> Any:
    return OmegaConf.to_container(node, resolve=True) if OmegaConf.is_config(node) else node


def algorithm_config(node: Any) -> dict[str, Any]:
    """An algorithm config as a plain mapping with ``name`` (a bare name is accepted)."""
    node = _plain(node)
    if isinstance(node, str):
        return {"name": node}
    if isinstance(node, Mapping) and "name" in node:
        return dict(node)
    raise ConfigError("collective", node, "must be an algorithm name or a mapping with 'name'")


def _text(value: Any) -> str:
    if isinstance(value, (list, tuple)):
        return ",".join(str(item) for item in value)
    return str(value)


def algorithm_label(config: Any) -> str:
    """The name, with the parameters that differ from the schema's defaults: ``wrht(m=17)``."""
    plain = algorithm_config(config)
    name = str(plain["name"])
    if name not in ALGORITHMS:
        return name
    defaults = dataclasses.asdict(ALGORITHMS.default_config(name))
    changed = [f"{key}={_text(value)}" for key, value in plain.items()
               if key != "name" and key in defaults and value != defaults[key] and value not in ([], ())]
    return f"{name}({','.join(changed)})" if changed else name


@dataclass(frozen=True)
class Choice:
    """One algorithm a task runs, its label for rows, and whether it replaces the collective group's."""

    algorithm: Any
    label: str


def parse_ops(names: Sequence[str], key: str = "ops") -> tuple[CollectiveOp, ...]:
    """A task's list of ops: at least one, each a known op."""
    ops = tuple(CollectiveOp.from_config(name, key) for name in names)
    if not ops:
        raise ConfigError(key, [], "must list at least one op")
    return ops


def check_rank_counts(num_ranks: Sequence[int], key: str = "num_ranks") -> None:
    if not num_ranks or any(ranks < 1 for ranks in num_ranks):
        raise ConfigError(key, list(num_ranks), "must list rank counts >= 1")


def build_choices(nodes: Sequence[Any], key: str) -> tuple[Choice, ...]:
    choices = []
    for index, node in enumerate(nodes):
        config = algorithm_config(node)
        if config["name"] not in ALGORITHMS:
            raise ConfigError(key, config["name"], f"unknown algorithm; choose from {', '.join(ALGORITHMS.names())}")
        choices.append(Choice(ALGORITHMS.build(config, key=f"{key}[{index}]"), algorithm_label(config)))
    return tuple(choices)


def fabric_options() -> list[str]:
    """Every fabric option: registered fabrics and the variants in configs/fabric/."""
    from ddlsim.core.resources import config_file

    variants = [path.stem for path in config_file("fabric").glob("*.yaml")]
    return sorted({*FABRICS.names(), *variants})


def build_per_fabric(mapping: Mapping[str, Any], key: str = "collectives") -> dict[str, tuple[Choice, ...]]:
    """Parse a ``collectives`` mapping: fabric kind or option -> its algorithm choices (validated)."""
    per_fabric = {}
    entries = sorted(dict(_plain(mapping) or {}).items())
    known = fabric_options() if any(kind not in FABRICS for kind, _ in entries) else []
    for kind, node in entries:
        if kind not in FABRICS and kind not in known:
            raise ConfigError(f"{key}.{kind}", kind, f"unknown fabric; choose from {', '.join(known)}")
        nodes = node if isinstance(node, (list, tuple)) else [node]
        if not nodes:
            raise ConfigError(f"{key}.{kind}", [], "must name at least one algorithm")
        per_fabric[kind] = build_choices(nodes, f"{key}.{kind}")
    return per_fabric


def choices_for(config: Any, fabric_name: str, per_fabric: Mapping[str, tuple[Choice, ...]],
                own: tuple[Choice, ...], default: Any) -> tuple[Choice, ...]:
    """The choices of the run's fabric option, else of its kind, else the task's list, else the
    collective group's algorithm (`config` is the composed config)."""
    from ddlsim.tasks.base import config_label

    for name in (config_label(config, "fabric"), fabric_name):
        if name in per_fabric:
            return per_fabric[name]
    if own:
        return own
    node = config.get("collective") if hasattr(config, "get") else None
    return (Choice(default, algorithm_label(node) if node is not None else default.name),)
