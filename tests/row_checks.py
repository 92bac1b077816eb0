"""Row comparisons shared by the Session tests."""

from __future__ import annotations

import math


def same_rows(left, right):
    """Equal rows, key for key (NaN equal to NaN), naming the first key that differs."""
    assert len(left) == len(right)
    for a, b in zip(left, right, strict=True):
        assert a.keys() == b.keys()
        for key in a:
            both_nan = isinstance(a[key], float) and math.isnan(a[key]) and math.isnan(b[key])
            assert both_nan or a[key] == b[key], key
