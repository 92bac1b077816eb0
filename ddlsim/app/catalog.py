"""Every registered option of every group, loaded: what the config store and `--help` list."""

from __future__ import annotations

from ddlsim.core.registry import ALL_REGISTRIES


def load_all() -> None:
    """Import the module of every option `ddlsim.core.catalog` lists, so that each is registered."""
    for registry in ALL_REGISTRIES:
        for _ in registry:
            pass
