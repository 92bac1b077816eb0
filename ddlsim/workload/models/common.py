"""Config parsing shared by the registered models."""

from __future__ import annotations

from ddlsim.core.errors import ConfigError
from ddlsim.core.types import Precision


def parse_precision(value: str, key: str = "precision") -> Precision:
    try:
        return Precision(value)
    except ValueError:
        raise ConfigError(key, value, f"must be one of {', '.join(p.value for p in Precision)}") from None
