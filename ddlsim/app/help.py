"""`ddlsim --help`, answered without Hydra's listing of every config group.

Hydra's own ``--help`` lists the options of each group by copying its whole config repository
(every registered schema) once per group and subgroup, Hydra's own groups included: about 100
copies, 4-5 s. The help text is the same thing computed once: the options of a group are the
``.yaml`` files of that group's directory in each file source of the search path plus the
entries of Hydra's `ConfigStore`, listed with their public ``list``/``get_type`` calls. The
composed config (``$CONFIG``) comes from Hydra's public compose API, exactly as before.

`tests/test_cli_help.py` checks that the text equals Hydra's own ``--help`` output. Anything
other than ``--help`` or ``-h`` with overrides (``--resolve``, ``--hydra-help``, a custom
template using ``$FLAGS_HELP`` or ``$HYDRA_CONFIG_GROUPS``, a non-file search path entry) is left to
Hydra.
"""

from __future__ import annotations

import string
from collections.abc import Sequence
from pathlib import Path

from hydra import compose, initialize_config_dir
from hydra.core.config_store import ConfigStore
from hydra.core.object_type import ObjectType
from omegaconf import DictConfig, OmegaConf, open_dict

from ddlsim.app.config_store import config_dir, register_configs

HELP_FLAGS = ("--help", "-h")
_HANDLED_SOURCES = {"file", "structured"}
_HYDRA_ONLY_PACKAGE = "hydra.conf"  # Hydra's own package source: groups under hydra/ only


def help_overrides(arguments: Sequence[str]) -> list[str] | None:
    """The overrides of a plain ``--help`` call, or None when Hydra must answer it."""
    if not any(argument in HELP_FLAGS for argument in arguments):
        return None
    overrides = [argument for argument in arguments if argument not in HELP_FLAGS]
    if any(argument.startswith("-") for argument in overrides):
        return None
    return overrides


def _is_hydra_group(group: str) -> bool:
    return group == "hydra" or group.startswith("hydra/")


class _Sources:
    """The groups and options of the file and structured sources of the search path."""

    def __init__(self, directories: list[Path]) -> None:
        self.directories = directories
        self.store = ConfigStore.instance()

    def _store_entries(self, group: str) -> list[tuple[str, ObjectType]]:
        if group and self.store.get_type(group) is not ObjectType.GROUP:
            return []
        return [(name, self.store.get_type(f"{group}/{name}" if group else name)) for name in self.store.list(group)]

    def subgroups(self, group: str) -> set[str]:
        names = {name for name, kind in self._store_entries(group) if kind is ObjectType.GROUP}
        for directory in self.directories:
            path = directory / group
            if path.is_dir():
                names |= {item.name for item in path.iterdir() if item.is_dir() and item.name != "__pycache__"}
        return names

    def options(self, group: str) -> set[str]:
        names = {name.rpartition(".")[0] or name for name, kind in self._store_entries(group)
                 if kind is ObjectType.CONFIG}
        for directory in self.directories:
            path = directory / group
            if path.is_dir():
                names |= {item.name[: -len(".yaml")] for item in path.iterdir()
                          if item.is_file() and item.name.endswith(".yaml")}
        return names

    def groups(self, parent: str = "") -> list[str]:
        """As Hydra's help lists them: every group with options, depth first, Hydra's own left out."""
        found: list[str] = []
        for name in sorted(self.subgroups(parent)):
            group = f"{parent}/{name}" if parent else name
            if _is_hydra_group(group):
                continue
            if self.options(group):
                found.append(group)
            found.extend(self.groups(group))
        return found

    def format(self) -> str:
        return "".join(f"{group}: {', '.join(sorted(self.options(group)))}\n" for group in sorted(self.groups()))


def _file_sources(config: DictConfig) -> list[Path] | None:
    directories = []
    for source in config.hydra.runtime.config_sources:
        if source.schema == "file":
            directories.append(Path(source.path))
        elif source.schema not in _HANDLED_SOURCES and source.path != _HYDRA_ONLY_PACKAGE:
            return None
    return directories


def render_help(overrides: Sequence[str]) -> str | None:
    """The text ``ddlsim <overrides> --help`` prints, or None when Hydra must render it."""
    register_configs()
    with initialize_config_dir(config_dir=str(config_dir()), version_base="1.3", job_name="ddlsim"):
        config = compose(config_name="config", overrides=list(overrides), return_hydra_config=True)
        template = str(config.hydra.help.template)
        directories = _file_sources(config)
        if directories is None or "$FLAGS_HELP" in template or "$HYDRA_CONFIG_GROUPS" in template:
            return None
        groups = _Sources(directories).format()
    with open_dict(config):
        del config["hydra"]
    return string.Template(template).substitute(APP_CONFIG_GROUPS=groups, CONFIG=OmegaConf.to_yaml(config))
