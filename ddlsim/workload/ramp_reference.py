"""RAMP's published Megatron and DLRM parameter tables (Tables 9 and 10), transcribed as printed.

The values are the paper's, with its rounding ("574M", "65.6K"); sizes are decimal (1 GB = 1e9
bytes). They are reference data for `scripts/ramp_tables_9_10.py` and the validation tests, not
inputs of any model.
"""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class Table9Row:
    loss: float
    d_model: int
    heads: int
    layers: int
    steps: float
    global_batch: int
    params: float
    params_per_gpu: float
    gpus: int
    dp: int
    mp: int
    dp_message_bytes: float
    mp_message_bytes: float


TABLE9 = (
    Table9Row(2.5, 1152, 12, 36, 65.6e3, 2480, 574e6, 574e6, 16, 16, 1, 1.14e9, 0),
    Table9Row(2.4, 1536, 16, 40, 70.5e3, 3424, 1.13e9, 1.13e9, 32, 32, 1, 2.27e9, 0),
    Table9Row(2.2, 2304, 24, 56, 78.9e3, 4896, 3.57e9, 893e6, 128, 32, 4, 1.78e9, 150e6),
    Table9Row(2.0, 4096, 32, 50, 87.5e3, 7168, 10.1e9, 1.2e9, 512, 64, 8, 2.52e9, 268e6),
    Table9Row(1.8, 6144, 64, 71, 98.1e3, 10880, 32.2e9, 1e9, 2048, 64, 32, 2.01e9, 402e6),
    Table9Row(1.7, 8192, 128, 128, 111e3, 16896, 103.1e9, 811e6, 32768, 256, 128, 1.62e9, 1.11e9),
    Table9Row(1.5, 16384, 512, 132, 191e3, 14080, 425.2e9, 843e6, 65536, 128, 512, 1.69e9, 3.69e9),
    Table9Row(1.3, 32768, 2048, 160, 3.7e6, 1024, 2.06e12, 1.03e9, 65536, 32, 2048, 2.08e9, 2.15e9),
    Table9Row(1.2, 131072, 8192, 52, 68e6, 64, 10.7e12, 1.35e9, 65536, 8, 8192, 2.7e9, 2.15e9),
    Table9Row(1.0, 262144, 65536, 90, 2.49e9, 4, 74.2e12, 1.27e9, 65536, 1, 65536, 2.55e9, 2.15e9),
)


@dataclass(frozen=True)
class Table10Row:
    gpus: int
    tables: int
    rows_total: float
    sparse_feature_size: int
    partitioned_feature_size: int
    batch_per_gpu: int
    global_batch: int
    dense_features: int
    mlp_hidden: int
    top_layers: int
    bottom_layers: int
    params: float
    params_per_gpu: float


TABLE10 = (
    Table10Row(256, 8, 8e7, 4096, 128, 8192, 65536, 16, 1024, 5, 4, 328e9, 1.3e9),
    Table10Row(1024, 16, 1.6e8, 8192, 128, 4096, 65536, 16, 1024, 5, 4, 1.3e12, 1.3e9),
    Table10Row(4096, 32, 3.2e8, 16384, 128, 3072, 65536, 16, 1024, 5, 4, 5.2e12, 1.3e9),
    Table10Row(16384, 128, 1.28e9, 16384, 128, 512, 65536, 16, 1024, 5, 4, 21e12, 1.3e9),
    Table10Row(65536, 256, 2.56e9, 16384, 64, 256, 65536, 16, 1024, 5, 4, 41.9e12, 0.7e9),
)


def significant_digits(printed: float) -> int:
    """Significant digits of a value as the paper prints it (1.14e9 -> 3, 1e9 -> 1, 65536 -> 5)."""
    mantissa = f"{printed:.6e}".split("e")[0].replace(".", "").rstrip("0")
    return max(1, len(mantissa))


def agrees_as_printed(value: float, printed: float) -> bool:
    """True when `value` printed to the paper's significant digits, rounded or truncated, is `printed`."""
    if printed == 0:
        return value == 0
    unit = 10 ** (math.floor(math.log10(abs(printed))) - significant_digits(printed) + 1)
    rounded = abs(value - printed) <= unit / 2 * (1 + 1e-9)
    truncated = printed <= value < printed + unit
    return rounded or truncated
