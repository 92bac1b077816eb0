"""Seeds of random generators: integers in [0, 2**63), checked where a config gives one.

numpy's generators refuse a negative seed (with a message that names no key), and a seed beyond
int64 runs but cannot be stored in the int64 ``seed`` column of ``results.parquet``: checked
when the config is built, such a seed is a one-line `ConfigError` naming its key before any work
starts or any file is written.
"""

from __future__ import annotations

from typing import Any

from ddlsim.core.errors import ConfigError

SEED_LIMIT = 2**63  # int64: what numpy generators, Parquet columns and every launcher take


def check_seed(value: Any, key: str = "seed") -> int:
    """`value` if it is an integer in [0, 2**63 - 1], else a `ConfigError` naming `key`."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < SEED_LIMIT:
        raise ConfigError(key, value, f"must be an integer in [0, {SEED_LIMIT - 1}] (a seed is a non-negative int64)")
    return value
