"""RAMP's published Megatron and DLRM parameter tables (Tables 9 and 10), as printed.

The values live in the paper data file (`configs/reference/papers.yaml`, tables ``ramp_table9``
and ``ramp_table10``), with the paper's rounding ("574M", "65.6K"); sizes are decimal (1 GB = 1e9
bytes). They are reference data for `experiment=ramp_table9` / ``ramp_table10`` and the
validation tests; the experiments' model inputs (configs/ramp_table9, configs/ramp_table10)
agree with them (tests/report/test_papers.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ddlsim.core.papers import paper_table


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


TABLE9 = tuple(Table9Row(**row) for row in paper_table("ramp_table9").rows)


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


TABLE10 = tuple(Table10Row(**row) for row in paper_table("ramp_table10").rows)


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
