import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ddlsim.core import units
from ddlsim.core.errors import ConfigError


@pytest.mark.parametrize(
    ("text", "expected"),
    [("80GiB", 80 * 2**30), ("80GB", 80 * 10**9), ("1.5GB", 1_500_000_000), ("950B", 950), ("8Gb", 10**9),
     ("4KiB", 4096), ("4kB", 4000), ("1 MiB", 2**20), (1024, 1024), ("2e3B", 2000), ("0B", 0)],
)
def test_sizes_keep_decimal_and_binary_prefixes_apart(text, expected):
    assert units.parse_size_bytes(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [("400Gbps", 400e9), ("400 Gb/s", 400e9), ("150GB/s", 1.2e12), ("12.8Tbps", 12.8e12), ("1GiB/s", 8 * 2**30),
     ("2.4Tbps", 2.4e12), (25e9, 25e9)],
)
def test_bandwidths(text, expected):
    assert units.parse_bandwidth_bps(text) == pytest.approx(expected, rel=1e-15)


@pytest.mark.parametrize(
    ("text", "expected"),
    [("1.3us", 1.3e-6), ("100ns", 1e-7), ("25 ms", 0.025), ("2s", 2.0), ("1µs", 1e-6), ("350ns", 350e-9),
     ("2min", 120.0), (0.5, 0.5)],
)
def test_times(text, expected):
    assert units.parse_time_s(text, bounds=units.PERIOD_BOUNDS_S) == pytest.approx(expected, rel=1e-15)


def test_flop_counts_and_rates():
    assert units.parse_flop_per_s("312TFLOPS") == 312e12
    assert units.parse_flop_per_s("989.5 TFLOP/s") == 989.5e12
    assert units.parse_flop("3.2TFLOP") == 3.2e12


@pytest.mark.parametrize(
    ("parser", "text", "rule"),
    [(units.parse_bandwidth_bps, "-5Gbps", "must be positive"),
     (units.parse_bandwidth_bps, "0Gbps", "must be positive"),
     (units.parse_bandwidth_bps, "5GHz", "unknown unit"),
     (units.parse_size_bytes, "12 parsecs", "unknown unit"),
     (units.parse_size_bytes, "3b", "whole number of bytes"),
     (units.parse_time_s, "1 fortnight", "unknown time unit"),
     (units.parse_time_s, "nan s", "must be a duration"),
     (units.parse_time_s, True, "not a boolean"),
     (units.parse_size_bytes, [1], "must be a size"),
     # a unit that does not parse is named, even when the number before it is 0 (issue 21)
     (units.parse_bandwidth_bps, "0x10Gbps", "unknown unit 'x10Gbps'"),
     (units.parse_size_bytes, "0x10B", "unknown unit 'x10B'"),
     (units.parse_time_s, "0x1s", "unknown time unit 'x1s'"),
     (units.parse_flop_per_s, "0xTFLOPS", "unknown unit 'xTFLOPS'")],
)
def test_bad_values_name_the_key_and_rule(parser, text, rule):
    with pytest.raises(ConfigError) as caught:
        parser(text, "fabric.thing")
    assert caught.value.key == "fabric.thing"
    assert rule in str(caught.value)
    assert str(caught.value).startswith("fabric.thing = ")


positive = st.floats(min_value=1e-12, max_value=1e21, allow_nan=False, allow_infinity=False)


@given(positive)
def test_bandwidth_round_trip(value):
    text = units.format_bandwidth_bps(value, digits=17)
    assert units.parse_bandwidth_bps(text, bounds=None) == pytest.approx(value, rel=1e-14)


@given(st.floats(min_value=1e-13, max_value=1e6, allow_nan=False))
def test_time_round_trip(value):
    assert units.parse_time_s(units.format_time_s(value, digits=17), bounds=None) == pytest.approx(value, rel=1e-14)


@given(st.integers(min_value=0, max_value=2**62), st.booleans())
def test_size_round_trip_is_exact(value, binary):
    assert units.parse_size_bytes(units.format_size_bytes(value, binary=binary, digits=80), bounds=None) == value


@given(positive)
def test_flop_rate_round_trip(value):
    text = units.format_flop_per_s(value, digits=17)
    assert units.parse_flop_per_s(text, bounds=None) == pytest.approx(value, rel=1e-14)


def test_formats_are_readable():
    assert units.format_size_bytes(1.5e9) == "1.5GB"
    assert units.format_size_bytes(2**30, binary=True) == "1GiB"
    assert units.format_time_s(1.3e-6) == "1.3us"
    assert units.format_bandwidth_bps(400e9) == "400Gbps"
    assert units.format_flop_per_s(312e12) == "312TFLOPS"


def test_transfer_time_counts_bits():
    assert units.transfer_time_s(1e9, 8e9) == 1.0
    assert math.isclose(units.transfer_time_s(950, 400e9), 19e-9)


@pytest.mark.parametrize(
    ("parser", "text", "rule"),
    [(units.parse_time_s, "1e30s", "a delay is at most 1s"),
     (units.parse_time_s, "1.5s", "a delay is at most 1s"),
     (units.parse_bandwidth_bps, "1e-3bps", "a bandwidth is between 1kbps and 1Pbps"),
     (units.parse_bandwidth_bps, "1e30Gbps", "a bandwidth is between 1kbps and 1Pbps"),
     (units.parse_bandwidth_bps, "200TB/s", "a bandwidth is between 1kbps and 1Pbps"),
     (units.parse_size_bytes, "1e30B", "a size is at most 1PB"),
     (units.parse_size_bytes, "1e30GB", "a size is at most 1PB"),
     (units.parse_flop_per_s, "2EFLOPS", "a FLOP rate is at most 1EFLOPS")],
)
def test_implausible_quantities_are_refused_with_their_range(parser, text, rule):
    with pytest.raises(ConfigError, match="is implausible") as caught:
        parser(text, "fabric.thing")
    assert rule in str(caught.value) and str(caught.value).startswith(f"fabric.thing = {text!r}: ")


@pytest.mark.parametrize(
    ("parser", "text", "expected"),
    [(units.parse_time_s, "1s", 1.0), (units.parse_time_s, "0s", 0.0),
     (units.parse_bandwidth_bps, "1kbps", 1e3), (units.parse_bandwidth_bps, "1Pbps", 1e15),
     (units.parse_bandwidth_bps, "125TB/s", 1e15), (units.parse_size_bytes, "1PB", 10**15),
     (units.parse_flop_per_s, "1EFLOPS", 1e18)],
)
def test_the_bounds_of_the_plausible_ranges_are_accepted(parser, text, expected):
    assert parser(text) == expected


def test_periods_take_up_to_an_hour_and_none_lifts_the_range():
    assert units.parse_time_s("300s", bounds=units.PERIOD_BOUNDS_S) == 300.0  # a patch panel's minutes
    with pytest.raises(ConfigError, match="a duration is at most 1h"):
        units.parse_time_s("2h", "reconfiguration", bounds=units.PERIOD_BOUNDS_S)
    assert units.parse_size_bytes("1e30B", bounds=None) == 10**30
