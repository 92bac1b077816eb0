"""Shared look of ddlsim figures: one colour and marker per fabric, units on axes, PNG + PDF.

Figures are written without timestamps or software versions in their metadata, so the same
rows give the same files.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

FORMATS = ("png", "pdf")
_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*", "<", ">")
_METADATA = {"png": {"Software": None}, "pdf": {"Creator": None, "Producer": None, "CreationDate": None}}

# Well-known fabrics keep their colour across figures; others take the next free one.
_PREFERRED = ("ramp", "superpod", "topoopt", "opsquare", "sipac", "torus2d", "bcube", "optical_ring",
              "leaf_spine", "ideal")

TIME_UNITS = (("years", 365.25 * 86400.0), ("days", 86400.0), ("h", 3600.0), ("min", 60.0), ("s", 1.0),
              ("ms", 1e-3), ("us", 1e-6), ("ns", 1e-9))


def series_styles(labels: Iterable[str]) -> dict[str, dict[str, object]]:
    """A colour, marker and line style per label, stable for well-known fabric names."""
    palette = plt.get_cmap("tab10").colors
    styles: dict[str, dict[str, object]] = {}
    taken: set[int] = set()
    ordered = list(dict.fromkeys(labels))
    for label in ordered:
        for index, known in enumerate(_PREFERRED):
            if label.split("_")[0] == known.split("_")[0] and index not in taken:
                styles[label] = {"color": palette[index], "marker": _MARKERS[index]}
                taken.add(index)
                break
    free = [index for index in range(len(palette)) if index not in taken]
    for label in ordered:
        if label not in styles:
            index = free.pop(0) if free else len(styles) % len(palette)
            styles[label] = {"color": palette[index], "marker": _MARKERS[index % len(_MARKERS)]}
    return styles


def time_unit(values_s: Sequence[float] | pd.Series) -> tuple[str, float]:
    """The largest unit in which the median of `values_s` is at least 1 (``("days", 86400.0)``)."""
    series = pd.Series(values_s, dtype=float).dropna()
    series = series[series > 0]
    if series.empty:
        return "s", 1.0
    typical = float(series.median())
    for name, scale in TIME_UNITS:
        if typical >= scale:
            return name, scale
    return TIME_UNITS[-1]


def slug(text: str) -> str:
    return re.sub(r"[^0-9A-Za-z]+", "_", text).strip("_").lower() or "figure"


def save_figure(figure: plt.Figure, directory: Path, stem: str, formats: Sequence[str] = FORMATS) -> list[Path]:
    """Write `figure` as ``<stem>.png`` and ``<stem>.pdf`` under `directory`; close it."""
    directory.mkdir(parents=True, exist_ok=True)
    paths = []
    for extension in formats:
        path = directory / f"{stem}.{extension}"
        figure.savefig(path, dpi=150, bbox_inches="tight", metadata=_METADATA.get(extension))
        paths.append(path)
    plt.close(figure)
    return paths


def legend_outside(axis: plt.Axes, title: str | None = None) -> None:
    handles, labels = axis.get_legend_handles_labels()
    if handles:
        axis.legend(handles, labels, title=title, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False,
                    fontsize="small")


def figure_legend(figure: plt.Figure, axis: plt.Axes, title: str | None = None) -> None:
    """One legend for a figure of panels, outside on the right (needs a constrained layout)."""
    handles, labels = axis.get_legend_handles_labels()
    if handles:
        figure.legend(handles, labels, title=title, loc="outside right upper", frameon=False, fontsize="small")
