"""`simple_override` gives exactly the `Override` Hydra's parser gives for the lines it takes, and takes
none that the grammar reads differently (`ddlsim.app.override_lines`)."""

from __future__ import annotations

import itertools

import pytest
from hydra.core.override_parser.overrides_parser import OverridesParser

from ddlsim.app.override_lines import simple_override
from ddlsim.app.session import _classify

KEYS = ["model.target_loss", "parallel.data", "fabric.nic_bandwidth", "a.b.c", "_x.y_2", "hydra.job.name",
        "model", "+model.layers", "~model.layers", "model.layers@pkg", "model.Layers2", "x.1", "x-y.z", "x.$y"]
VALUES = ["0", "-0", "+5", "8", "16", "1536", "007", "1_000", "-12", "2.574", "0.5", "-0.25", "+3.0", "10.0",
          ".5", "1.", "1e5", "1.5e-3", "2.5.1", "inf", "-inf", "NaN", "nan", "Inf", "Infinity", "true", "False",
          "TRUE", "null", "NULL", "None", "ring", "best", "h100_sxm", "superpod", "_private", "x1", "a-b",
          "400Gbps", "1.3us", "'8'", '"ring"', "[1,2]", "{a:1}", "${x}", "a,b", "range(1,3)", "", " 8", "8 ",
          "choice(1,2)", "ab$", "a\\,b"]
_HYDRA = OverridesParser.create()


def _hydra(line):
    try:
        return _HYDRA.parse_overrides([line])[0]
    except Exception as error:  # noqa: BLE001 (a line the grammar refuses: the fast path must not take it)
        return error


@pytest.mark.parametrize("key", KEYS)
def test_every_line_taken_parses_as_hydra_parses_it(key):
    for value in VALUES:
        line = f"{key}={value}"
        fast = simple_override(line)
        if fast is None:
            continue
        expected = _hydra(line)
        assert fast == expected, line
        assert type(fast.value()) is type(expected.value()), line
        assert (fast.is_sweep_override(), fast.is_hydra_override(), fast.is_add(), fast.is_delete(),
                fast.input_line) == (expected.is_sweep_override(), expected.is_hydra_override(),
                                     expected.is_add(), expected.is_delete(), expected.input_line), line


@pytest.mark.parametrize(("line", "value"), [
    ("model.target_loss=2.574", 2.574), ("parallel.data=16", 16), ("parallel.data=-4", -4),
    ("collective.name=best", "best"), ("device.name=h100_sxm", "h100_sxm"), ("model.target_loss=0.5", 0.5),
])
def test_the_lines_a_sweep_repeats_take_the_fast_path(line, value):
    parsed = simple_override(line)
    assert parsed is not None and parsed.value() == value and type(parsed.value()) is type(value)


@pytest.mark.parametrize("line", [f"{key}={value}" for key, value in itertools.product(
    ["model.x"], ["007", "1_000", ".5", "1.", "1e5", "inf", "NaN", "true", "null", "400Gbps", "'8'", "a-b", ""])])
def test_other_lines_go_to_hydra(line):
    assert simple_override(line) is None


def test_a_session_classifies_a_line_as_before():
    for line in ["model.target_loss=2.5", "parallel.data=8", "fabric=superpod", "+model.foo=1", "seed=7"]:
        parsed, plain = _classify(line)
        assert parsed == _hydra(line)
