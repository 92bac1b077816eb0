"""The analytic pipelined iteration gives exactly (``==``, bit for bit) the numbers stored from the
code before its fast paths (`exact_reference.py` says how the file was written and what it holds)."""

from __future__ import annotations

import json

import pytest
from exact_reference import DATA, bench_cases, grid_cases, random_cases, round_cases

STORED = json.loads(DATA.read_text())


def _check(name: str, run) -> None:
    assert name in STORED, f"{name!r} has no stored value; rewrite the file at the base commit"
    assert run() == STORED[name]


@pytest.mark.parametrize(("name", "run"), list(round_cases()),
                         ids=lambda value: value if isinstance(value, str) else "")
def test_round_engine_is_bit_exact(name, run):
    _check(name, run)


def test_every_grid_case_is_bit_exact():
    for name, run in grid_cases():
        _check(name, run)


def test_every_random_pipeline_is_bit_exact():
    for name, run in random_cases():
        _check(name, run)


def test_the_benchmark_configurations_are_bit_exact():
    for name, run in bench_cases():
        _check(name, run)


def test_the_stored_file_holds_every_case():
    names = [name for make in (round_cases, grid_cases, random_cases, bench_cases) for name, _ in make()]
    assert sorted(names) == sorted(STORED)
