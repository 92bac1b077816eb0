"""Where ddlsim's shipped data lives: the ``configs/`` and ``profiles/`` trees.

Both stay at the top level of the repository and are installed as the package data
``ddlsim.configs`` and ``ddlsim.profiles`` (pyproject.toml maps them with ``package-dir``), so a
wheel or ``pip install .`` finds them through `importlib.resources` from any directory. A source
checkout that is only on ``PYTHONPATH`` (not installed) has no ``ddlsim.configs`` to import; it
reads the same trees beside the imported ``ddlsim`` package. Every reader asks this module, never a
path relative to its own source file.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

CONFIGS = "configs"
PROFILES = "profiles"
CONFIG_MARKER = "config.yaml"  # the primary config: its presence tells a configs tree is whole


def _data_dir(name: str) -> Path:
    """The directory of the shipped data tree `name` that belongs to the imported ``ddlsim``.

    An editable install of another checkout registers its own ``ddlsim.configs``; that tree is
    taken only when it sits where this ``ddlsim`` would put it (inside the package, as in a
    wheel, or beside it, as in an editable install of the same checkout).
    """
    package_dir = Path(str(resources.files("ddlsim")))
    try:
        data_dir = Path(str(resources.files(f"ddlsim.{name}")))
    except ModuleNotFoundError:
        data_dir = None
    if data_dir is not None and data_dir.parent in (package_dir, package_dir.parent):
        return data_dir
    return package_dir.parent / name  # a checkout on PYTHONPATH, not installed


def configs_dir() -> Path:
    """The ``configs/`` tree: Hydra's config directory and every YAML data file."""
    return _data_dir(CONFIGS)


def profiles_dir() -> Path:
    """The ``profiles/`` tree of measured compute profiles shipped with ddlsim."""
    return _data_dir(PROFILES)


def config_file(*parts: str) -> Path:
    """One file of the configs tree, e.g. ``config_file("reference", "papers.yaml")``."""
    return configs_dir().joinpath(*parts)


def require_configs() -> Path:
    """The configs tree, or a one-line error saying how to get one when it is missing."""
    directory = configs_dir()
    if not (directory / CONFIG_MARKER).is_file():
        raise FileNotFoundError(
            f"ddlsim's configs were not found at {directory}: install ddlsim (pip install . or a wheel, "
            "which ship them as ddlsim.configs) or run from a checkout that has configs/")
    return directory
