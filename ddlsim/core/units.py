"""Every unit conversion in ddlsim, and nothing else.

Internal units are fixed: bytes (int), seconds (float), bits per second (float), FLOP (float)
and FLOP per second (float). Users type familiar strings such as ``"400Gbps"``, ``"1.3us"``,
``"80GiB"`` or ``"312TFLOPS"``; they are parsed here, once, when a config is built.

Decimal (SI) and binary (IEC) prefixes are kept apart: ``GB`` is 10**9 bytes, ``GiB`` is 2**30
bytes. ``b`` is a bit and ``B`` a byte.

One rule for text (every config value): a quantity carries its unit (`UNIT_RULE`); ``"400"`` is
an error, never silently 400 b/s. Only zero may go without one. A Python number (not text) is
already in the internal unit, as the parameter's name says (``size_bytes=10**9``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from decimal import Decimal, localcontext
from typing import Final

from ddlsim.core.errors import ConfigError

KILO: Final = 10**3
MEGA: Final = 10**6
GIGA: Final = 10**9
TERA: Final = 10**12
PETA: Final = 10**15
EXA: Final = 10**18

KIBI: Final = 2**10
MEBI: Final = 2**20
GIBI: Final = 2**30
TEBI: Final = 2**40
PEBI: Final = 2**50
EXBI: Final = 2**60

BITS_PER_BYTE: Final = 8

NANOSECOND: Final = 1e-9
MICROSECOND: Final = 1e-6
MILLISECOND: Final = 1e-3

DECIMAL_PREFIXES: Final[dict[str, int]] = {
    "": 1,
    "k": KILO,
    "K": KILO,
    "M": MEGA,
    "G": GIGA,
    "T": TERA,
    "P": PETA,
    "E": EXA,
}
BINARY_PREFIXES: Final[dict[str, int]] = {
    "Ki": KIBI,
    "Mi": MEBI,
    "Gi": GIBI,
    "Ti": TEBI,
    "Pi": PEBI,
    "Ei": EXBI,
}
_ALL_PREFIXES: Final = {**DECIMAL_PREFIXES, **BINARY_PREFIXES}

TIME_UNITS_S: Final[dict[str, float]] = {
    "ps": 1e-12,
    "ns": NANOSECOND,
    "us": MICROSECOND,
    "µs": MICROSECOND,
    "μs": MICROSECOND,
    "ms": MILLISECOND,
    "s": 1.0,
    "min": 60.0,
    "h": 3600.0,
}

_NUMBER = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"
_QUANTITY = re.compile(rf"^\s*(?P<number>{_NUMBER})\s*(?P<unit>[^\d\s].*?)?\s*$")
_PREFIX = r"(?P<prefix>[kKMGTPE]i|[kKMGTPE])?"
_SIZE_UNIT = re.compile(rf"^{_PREFIX}(?P<base>B|b|bytes?|bits?)$")
_RATE_UNIT = re.compile(rf"^{_PREFIX}(?P<base>bps|b/s|bit/s|Bps|B/s|byte/s)$")
_FLOP_UNIT = re.compile(rf"^{_PREFIX}(?P<base>FLOPs?|flops?)$")
_FLOP_RATE_UNIT = re.compile(rf"^{_PREFIX}(?P<base>FLOPS|FLOP/s|flop/s|flops/s)$")


def bytes_to_bits(size_bytes: float) -> float:
    return size_bytes * BITS_PER_BYTE


def bits_to_bytes(size_bits: float) -> float:
    return size_bits / BITS_PER_BYTE


def transfer_time_s(size_bytes: float, bandwidth_bps: float) -> float:
    """Seconds to push `size_bytes` through `bandwidth_bps` (no latency)."""
    return bytes_to_bits(size_bytes) / bandwidth_bps


# Plausible ranges of physical quantities (README, "Values take units"). A value outside is a
# typo (a prefix or an exponent too many), not a network or device anyone builds: today's links
# run at 1-1.6 Tb/s and GPUs hold 80-192 GB and do up to 20 PFLOPS, far inside them.
BANDWIDTH_BOUNDS_BPS: Final = (1e3, 1e15)  # 1 kb/s to 1 Pb/s
DELAY_BOUNDS_S: Final = (0.0, 1.0)  # a latency, propagation or overhead: at most 1 s
# A reconfiguration or measurement period: at most 1 h (patch panels take minutes, TopoOpt Table 1).
PERIOD_BOUNDS_S: Final = (0.0, 3600.0)
SIZE_BOUNDS_BYTES: Final = (0.0, 1e15)  # a message, buffer or memory: at most 1 PB
FLOP_RATE_BOUNDS: Final = (0.0, 1e18)  # one device: at most 1 EFLOPS

UNIT_RULE: Final = ("needs a unit: values take units, e.g. '400Gbps', '150GB/s', '1.3us', '80GiB', "
                     "'312TFLOPS' (only 0 may go without one)")


def _split(value: object, key: str, what: str, example: str) -> tuple[float, str]:
    if isinstance(value, bool):
        raise ConfigError(key, value, f"must be a {what} such as {example!r}, not a boolean")
    if isinstance(value, (int, float)):
        return float(value), ""
    if not isinstance(value, str):
        raise ConfigError(key, value, f"must be a {what} such as {example!r}")
    match = _QUANTITY.match(value)
    if match is None:
        raise ConfigError(key, value, f"must be a {what} such as {example!r}")
    number, unit = float(match["number"]), (match["unit"] or "")
    if not unit and number != 0:
        raise ConfigError(key, value, UNIT_RULE)
    return number, unit


def _check_sign(number: float, value: object, key: str, allow_zero: bool) -> None:
    if not math.isfinite(number):
        raise ConfigError(key, value, "must be finite")
    if number < 0 or (number == 0 and not allow_zero):
        raise ConfigError(key, value, "must be zero or positive" if allow_zero else "must be positive")


def _check_plausible(quantity: float, value: object, key: str, bounds: tuple[float, float] | None, what: str,
                     fmt: Callable[[float], str]) -> None:
    """A non-zero `quantity` outside `bounds` (the ``*_BOUNDS`` above) is a typo, not hardware anyone builds."""
    if bounds is None or quantity == 0:
        return
    low, high = bounds
    if not low <= quantity <= high:
        shown = f"at most {fmt(high)}" if low == 0 else f"between {fmt(low)} and {fmt(high)}"
        raise ConfigError(key, value, f"is implausible: a {what} is {shown} (README, 'Values take units')")


def _prefixed(number: float, unit: str, pattern: re.Pattern[str], value: object, key: str,
              what: str, example: str) -> tuple[float, str]:
    match = pattern.match(unit)
    if match is None:
        raise ConfigError(key, value, f"unknown unit {unit!r} for a {what} (example: {example!r})")
    return number * _ALL_PREFIXES[match["prefix"] or ""], match["base"]


def parse_size_bytes(value: object, key: str = "size", *, allow_zero: bool = True,
                     bounds: tuple[float, float] | None = SIZE_BOUNDS_BYTES) -> int:
    """``"80GiB"`` -> 85899345920, ``"1.5GB"`` -> 1500000000, ``"8Gb"`` -> 10**9 (bits / 8).

    The arithmetic is decimal and exact, so any whole number of bytes survives a round trip
    through `format_size_bytes`. `bounds` is the plausible range (None: any size).
    """
    example = "80GiB"
    number, unit = _split(value, key, "size", example)
    match = _SIZE_UNIT.match(unit) if unit else None
    if unit and match is None:
        raise ConfigError(key, value, f"unknown unit {unit!r} for a size (example: {example!r})")
    _check_sign(number, value, key, allow_zero)
    exact = Decimal(_QUANTITY.match(value)["number"]) if isinstance(value, str) else Decimal(value)
    size_bytes = exact
    if match is not None:
        size_bytes = exact * _ALL_PREFIXES[match["prefix"] or ""]
        if match["base"].startswith("b"):
            size_bytes /= BITS_PER_BYTE
    _check_plausible(float(size_bytes), value, key, bounds, "size", format_size_bytes)
    if size_bytes != size_bytes.to_integral_value():
        raise ConfigError(key, value, "must be a whole number of bytes")
    return int(size_bytes)


def parse_bandwidth_bps(value: object, key: str = "bandwidth", *, allow_zero: bool = False,
                        bounds: tuple[float, float] | None = BANDWIDTH_BOUNDS_BPS) -> float:
    """``"400Gbps"`` -> 4e11; ``"150GB/s"`` -> 1.2e12 (bytes are 8 bits); a Python number is bps."""
    example = "400Gbps"
    number, unit = _split(value, key, "bandwidth", example)
    scaled, base = _prefixed(number, unit, _RATE_UNIT, value, key, "bandwidth", example) if unit else (number, "")
    _check_sign(number, value, key, allow_zero)
    bandwidth_bps = scaled * BITS_PER_BYTE if base[:1] == "B" or base.startswith("byte") else scaled
    _check_plausible(bandwidth_bps, value, key, bounds, "bandwidth", format_bandwidth_bps)
    return bandwidth_bps


def parse_time_s(value: object, key: str = "time", *, allow_zero: bool = True,
                 bounds: tuple[float, float] | None = DELAY_BOUNDS_S) -> float:
    """``"1.3us"`` -> 1.3e-6; ``"25 ms"`` -> 0.025; a Python number is seconds.

    `bounds` is the plausible range: a delay (latency, propagation, overhead) by default,
    `PERIOD_BOUNDS_S` for reconfigurations and measurement periods, None for any duration.
    """
    example = "1.3us"
    number, unit = _split(value, key, "duration", example)
    if unit and unit not in TIME_UNITS_S:
        raise ConfigError(key, value, f"unknown time unit {unit!r}; use one of {', '.join(TIME_UNITS_S)}")
    _check_sign(number, value, key, allow_zero)
    factor = TIME_UNITS_S[unit] if unit else 1.0
    # Dividing by the exact integer 10**k keeps "100ns" at 1e-07 rather than 1.0000000000000001e-07.
    time_s = number * factor if factor >= 1 else number / round(1 / factor)
    _check_plausible(time_s, value, key, bounds, "delay" if bounds == DELAY_BOUNDS_S else "duration", format_time_s)
    return time_s


def parse_flop(value: object, key: str = "flop", *, allow_zero: bool = True) -> float:
    """``"3.2TFLOP"`` -> 3.2e12 floating-point operations (a count, not a rate)."""
    example = "3.2TFLOP"
    number, unit = _split(value, key, "FLOP count", example)
    scaled = _prefixed(number, unit, _FLOP_UNIT, value, key, "FLOP count", example)[0] if unit else number
    _check_sign(number, value, key, allow_zero)
    return scaled


def parse_flop_per_s(value: object, key: str = "peak_flop_per_s", *, allow_zero: bool = False,
                     bounds: tuple[float, float] | None = FLOP_RATE_BOUNDS) -> float:
    """``"312TFLOPS"`` or ``"312 TFLOP/s"`` -> 3.12e14 FLOP per second."""
    example = "312TFLOPS"
    number, unit = _split(value, key, "FLOP rate", example)
    scaled = _prefixed(number, unit, _FLOP_RATE_UNIT, value, key, "FLOP rate", example)[0] if unit else number
    _check_sign(number, value, key, allow_zero)
    _check_plausible(scaled, value, key, bounds, "FLOP rate", format_flop_per_s)
    return scaled


def _format(value: float, unit: str, prefixes: dict[str, int], digits: int) -> str:
    if value == 0 or not math.isfinite(value):
        return f"{value:g}{unit}"
    chosen, scale = "", 1
    for prefix, factor in sorted(prefixes.items(), key=lambda item: item[1]):
        if prefix == "K":
            continue
        if abs(value) >= factor:
            chosen, scale = prefix, factor
    return f"{value / scale:.{digits}g}{chosen}{unit}"


def format_size_bytes(size_bytes: float, *, binary: bool = False, digits: int = 4) -> str:
    """1500000000 -> ``"1.5GB"``; with ``binary=True`` 2**30 -> ``"1GiB"``. Whole byte counts are
    divided exactly, so enough `digits` give a string that parses back to the same integer."""
    prefixes = {"": 1, **BINARY_PREFIXES} if binary else DECIMAL_PREFIXES
    if isinstance(size_bytes, int) and size_bytes > 0:
        chosen, scale = max(((p, f) for p, f in prefixes.items() if p != "K" and size_bytes >= f),
                            key=lambda item: item[1])
        with localcontext(prec=100):  # n / 2**60 needs ~80 significant digits to be exact
            mantissa = f"{Decimal(size_bytes) / scale:.{digits}g}"
        if "." in mantissa and "E" not in mantissa:
            mantissa = mantissa.rstrip("0").rstrip(".")
        return f"{mantissa}{chosen}B"
    return _format(size_bytes, "B", prefixes, digits)


def format_bandwidth_bps(bandwidth_bps: float, *, digits: int = 4) -> str:
    """4e11 -> ``"400Gbps"``."""
    return _format(bandwidth_bps, "bps", DECIMAL_PREFIXES, digits)


def format_flop_per_s(flop_per_s: float, *, digits: int = 4) -> str:
    """3.12e14 -> ``"312TFLOPS"``."""
    return _format(flop_per_s, "FLOPS", DECIMAL_PREFIXES, digits)


def format_time_s(time_s: float, *, digits: int = 4) -> str:
    """1.3e-6 -> ``"1.3us"``; 4000 -> ``"1.111h"``."""
    if time_s == 0 or not math.isfinite(time_s):
        return f"{time_s:g}s"
    ladder = [("ps", 1e-12), ("ns", 1e-9), ("us", 1e-6), ("ms", 1e-3), ("s", 1.0), ("min", 60.0), ("h", 3600.0)]
    unit, scale = ladder[0]
    for name, factor in ladder:
        if abs(time_s) >= factor:
            unit, scale = name, factor
    return f"{time_s / scale:.{digits}g}{unit}"
