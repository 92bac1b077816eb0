"""Shared pytest fixtures."""

from __future__ import annotations

import pytest

from ddlsim.app.config_store import register_configs


@pytest.fixture(scope="session", autouse=True)
def _registered_configs() -> None:
    register_configs()
