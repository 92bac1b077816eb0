"""Numbers as people read them: a few significant digits, one unit per column or axis.

Result columns carry their unit in their name (``_s``, ``_bytes``, ``_bps``); a table column or a
figure axis shows all its values in one unit picked from those values (``ms`` for completion
times around a millisecond, ``days`` for times to accuracy).
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np

from ddlsim.core import units

DIGITS = 4
TIME_UNITS = (("days", 86400.0), ("h", 3600.0), ("min", 60.0), ("s", 1.0), ("ms", 1e-3), ("us", 1e-6),
              ("ns", 1e-9))
SIZE_UNITS = (("TB", float(units.TERA)), ("GB", float(units.GIGA)), ("MB", float(units.MEGA)),
              ("kB", float(units.KILO)), ("B", 1.0))
BANDWIDTH_UNITS = (("Tb/s", float(units.TERA)), ("Gb/s", float(units.GIGA)), ("Mb/s", float(units.MEGA)),
                   ("kb/s", float(units.KILO)), ("b/s", 1.0))
FLOP_RATE_UNITS = (("PFLOP/s", 1e15), ("TFLOP/s", 1e12), ("GFLOP/s", 1e9), ("MFLOP/s", 1e6), ("FLOP/s", 1.0))
LADDERS = {"time_s": TIME_UNITS, "size_bytes": SIZE_UNITS, "bandwidth_bps": BANDWIDTH_UNITS,
           "flop_per_s": FLOP_RATE_UNITS}
_SUFFIXES = (("_s", "time_s"), ("_bytes", "size_bytes"), ("_bps", "bandwidth_bps"))


def quantity_kind(column: str) -> str | None:
    """``time_s``, ``size_bytes`` or ``bandwidth_bps`` for a column named with that unit, else None."""
    for suffix, kind in _SUFFIXES:
        if column.endswith(suffix):
            return kind
    return None


def _positive(values: Iterable[float]) -> np.ndarray:
    array = np.asarray([float(value) for value in values if _is_number(value)], dtype=float)
    return array[array > 0]


def pick_unit(values: Iterable[float], ladder: tuple[tuple[str, float], ...]) -> tuple[str, float]:
    """The largest unit of `ladder` in which the median of the positive `values` is at least 1."""
    positive = _positive(values)
    if positive.size == 0:
        return next((name, scale) for name, scale in ladder if scale == 1.0)
    typical = float(np.median(positive))
    for name, scale in ladder:
        if typical >= scale:
            return name, scale
    return ladder[-1]


def time_unit(values_s: Iterable[float]) -> tuple[str, float]:
    """``("ms", 1e-3)`` for times around a millisecond."""
    return pick_unit(values_s, TIME_UNITS)


def format_number(value: object, digits: int = DIGITS) -> str:
    """`digits` significant digits, no exponent for ordinary magnitudes: 0.09999999999999999 ->
    ``0.1``, 287196.4 -> ``287,200``, 1.5e-05 -> ``1.5e-05``; integers exactly (``32,768``);
    missing values -> ``-``."""
    if value is None or isinstance(value, str):
        return "-" if value is None else value
    if isinstance(value, int | np.integer) and not isinstance(value, bool):
        return f"{int(value):,}"  # counts are exact
    number = float(value)  # type: ignore[arg-type]
    if not math.isfinite(number):
        return "-" if math.isnan(number) else str(number)
    if number == 0:
        return "0"
    magnitude = math.floor(math.log10(abs(number)))
    if magnitude >= max(digits - 1, 3):
        rounded = round(number, digits - 1 - magnitude)
        return f"{rounded:,.0f}"
    return f"{number:.{digits}g}"


def format_alike(values: list) -> list[str]:
    """Numbers with as many decimals as the most precise of them needs (``2.2``, ``2.0``; not ``2``)."""
    if not values or not all(isinstance(value, float | np.floating) and math.isfinite(value) for value in values):
        return [format_number(value) if _is_number(value) else str(value) for value in values]
    decimals = max(len(format_number(value).partition(".")[2]) for value in values)
    return [f"{value:,.{min(decimals, DIGITS - 1)}f}" for value in values]


def format_duration(seconds: float, digits: int = DIGITS) -> str:
    """One duration in its own unit, for a line of text: ``2.965 days``, ``9.842 s``, ``2.527 ms``."""
    if seconds is None or not math.isfinite(seconds):
        return "-"
    name, scale = next(((name, scale) for name, scale in TIME_UNITS if abs(seconds) >= scale), TIME_UNITS[-1])
    if name == "days" and abs(seconds) < 2 * 86400.0:
        name, scale = "h", 3600.0
    return f"{format_number(seconds / scale, digits)} {name}"


def format_in_unit(values: Iterable[float], kind: str, digits: int = DIGITS) -> tuple[str, list[str]]:
    """A column's unit and its values in that unit (``("ms", ["0.25", "12.5"])``)."""
    values = list(values)
    if kind == "percent":
        return "%", [format_number(100.0 * float(value), digits - 1) if _is_number(value) else "-" for value in values]
    if kind == "ratio":
        return "x", [format_number(value, digits - 1) if _is_number(value) else "-" for value in values]
    name, scale = pick_unit(values, LADDERS[kind])
    return name, [format_number(float(value) / scale, digits) if _is_number(value) else "-" for value in values]


def _is_number(value: object) -> bool:
    return isinstance(value, int | float | np.integer | np.floating) and not isinstance(value, bool) \
        and math.isfinite(float(value))
