"""Every price of a grid of (fabric, algorithm, op, ranks, size) equals, float for float, the one
the code gave before the speed work of issue 34 (`price_grid.py` says how the file was written)."""

from __future__ import annotations

import json

import pytest

import ddlsim
from tests.network.price_grid import DATA, FABRICS, LARGE, key, price, small_cases

STORED = json.loads(DATA.read_text())


SLOW_FABRICS = ("ramp", "torus2d")  # over 10 s each


@pytest.mark.parametrize("fabric_name", [pytest.param(name, marks=pytest.mark.slow) if name in SLOW_FABRICS else name
                                         for name in FABRICS])
def test_small_prices_equal_the_stored_ones(fabric_name):
    cases = [case for case in small_cases() if case[0] == fabric_name]
    assert len(cases) > 100
    for case in cases:
        ddlsim.clear_caches()
        assert price(*case) == STORED[key(case)], case


@pytest.mark.slow
@pytest.mark.parametrize("case", LARGE, ids=key)
def test_large_prices_equal_the_stored_ones(case):
    ddlsim.clear_caches()
    assert price(*case) == STORED[key(case)]
