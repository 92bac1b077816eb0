"""The one look of every ddlsim figure.

- a fixed colour and marker per fabric (``configs/display.yaml``), readable names in legends;
- each value axis scaled from its data: linear from zero unless the values span more than
  `LOG_RANGE`, tick labels as plain numbers (``0.5``, ``20``, ``1,000``), never ``4.3x10^0``;
- times in a unit that suits them (ms, us, days), sizes as ``1 MB``;
- legends outside the panels, clear of data and titles; bar labels horizontal and readable;
- PNG and PDF, written without timestamps so the same rows give the same files.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib import ticker  # noqa: E402

from ddlsim.core import units  # noqa: E402
from ddlsim.report.display import display_table  # noqa: E402
from ddlsim.report.quantities import format_number  # noqa: E402

FORMATS = ("png", "pdf")
DPI = 150
LOG_RANGE = 30.0  # a value axis turns logarithmic when its largest value exceeds its smallest this many times
LABEL_FONT_SIZE = 8.0
_METADATA = {"png": {"Software": None}, "pdf": {"Creator": None, "Producer": None, "CreationDate": None}}
_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*", "<", ">", "h", "p")
_LINESTYLES = ("-", "--", ":", "-.")
_HATCHES = ("", "//", "..", "xx")
# Series that are not fabrics (algorithms, strategies, settings) take these in order: none is a
# fabric's colour, so that a colour means the same fabric in every figure.
_PALETTE = ("#393b79", "#ad494a", "#637939", "#7b4173", "#bd9e39", "#8c6d31", "#843c39", "#5254a3", "#636363",
            "#e7ba52", "#b5cf6b", "#9c9ede")


def series_styles(labels: Iterable[str]) -> dict[str, dict[str, object]]:
    """Colour, marker, line style and bar hatch per series label.

    A fabric keeps its colour from the display table in every figure; other series take the
    palette in order. Series that would look alike (variants of one fabric) differ in line
    style, marker and hatch.
    """
    table = display_table()
    ordered = list(dict.fromkeys(str(label) for label in labels))
    looks = {label: table.fabric(label) for label in ordered}
    free = iter(_PALETTE * (1 + len(ordered) // len(_PALETTE)))
    styles: dict[str, dict[str, object]] = {}
    seen: dict[str, int] = {}
    for index, label in enumerate(ordered):
        look = looks[label]
        colour, marker = (look.color, look.marker) if look else (next(free), _MARKERS[index % len(_MARKERS)])
        repeat = seen.get(colour, 0)
        seen[colour] = repeat + 1
        if repeat:
            marker = _MARKERS[(_MARKERS.index(marker) + repeat) % len(_MARKERS)] if marker in _MARKERS else marker
        styles[label] = {"color": colour, "marker": marker, "linestyle": _LINESTYLES[repeat % len(_LINESTYLES)],
                         "hatch": _HATCHES[repeat % len(_HATCHES)]}
    return styles


def line_style(style: dict[str, object]) -> dict[str, object]:
    return {key: style[key] for key in ("color", "marker", "linestyle")}


def bar_style(style: dict[str, object]) -> dict[str, object]:
    return {"color": style["color"], "hatch": style["hatch"] or None, "edgecolor": "white", "linewidth": 0.5}


def series_name(label: object) -> str:
    """What a legend shows for a series label (``superpod_sipac`` -> ``SuperPod (SiPAC VI-A)``)."""
    return display_table().series(str(label))


def op_name(op: object) -> str:
    return display_table().op(str(op))


def column_name(column: str) -> str:
    return display_table().column(column)


def choose_scale(values: Iterable[float], log_range: float = LOG_RANGE) -> str:
    """``log`` when the positive values span more than `log_range`, else ``linear``."""
    array = np.asarray([value for value in values if value is not None], dtype=float)
    array = array[np.isfinite(array)]
    if array.size == 0 or (array <= 0).any():
        return "linear"
    return "log" if array.max() / array.min() > log_range else "linear"


def plain_tick(value: float, _position: object = None) -> str:
    """Tick labels without exponents for ordinary magnitudes: 0.05, 2, 1,000,000; 10^9 as such."""
    if value == 0:
        return "0"
    magnitude = math.log10(abs(value))
    if (magnitude >= 9 or magnitude <= -4) and math.isclose(magnitude, round(magnitude), abs_tol=1e-9):
        return f"$10^{{{round(magnitude)}}}$"
    return format_number(value)


def style_axis(axis: plt.Axes, which: str, values: Iterable[float], label: str, *, scale: str = "auto",
               ticks: Sequence[float] | None = None, tick_label: Callable[[float], str] | None = None,
               from_zero: bool = True) -> str:
    """Scale, label and tick one axis (``x`` or ``y``) for the plotted `values`; return the scale.

    Linear value axes start at zero (`from_zero`) so that a 5 % gap looks like one. `ticks`
    puts ticks at those values (a few message sizes, GPU counts), labelled by `tick_label`.
    """
    values = [float(value) for value in values if value is not None and np.isfinite(value)]
    chosen = choose_scale(values) if scale == "auto" else scale
    set_scale = axis.set_xscale if which == "x" else axis.set_yscale
    target = axis.xaxis if which == "x" else axis.yaxis
    if chosen == "log2":
        set_scale("log", base=2)
    else:
        set_scale(chosen)
    formatter = ticker.FuncFormatter(lambda value, position: (tick_label or plain_tick)(value))
    if ticks is not None:
        target.set_major_locator(ticker.FixedLocator(list(ticks)))
        target.set_minor_locator(ticker.NullLocator())
    elif chosen.startswith("log"):
        positive = [value for value in values if value > 0]
        decades = math.log10(max(positive) / min(positive)) if positive else 0.0
        subs = (1.0,) if decades > 2 or chosen == "log2" else (1.0, 2.0, 5.0) if decades > 0.8 else \
            tuple(float(sub) for sub in range(1, 10))
        target.set_major_locator(ticker.LogLocator(base=2 if chosen == "log2" else 10, subs=subs))
        target.set_minor_locator(ticker.LogLocator(base=10, subs="auto") if chosen == "log" else ticker.NullLocator())
    target.set_major_formatter(formatter)
    target.set_minor_formatter(ticker.NullFormatter())
    if chosen == "linear" and from_zero and values and min(values) >= 0:
        (axis.set_xlim if which == "x" else axis.set_ylim)(0, max(values) * 1.08 if max(values) > 0 else 1)
    (axis.set_xlabel if which == "x" else axis.set_ylabel)(label)
    return chosen


def size_tick(size_bytes: float) -> str:
    """``1 MB``, ``10 GB``."""
    return re.sub(r"(?<=[0-9])(?=[A-Za-z])", " ", units.format_size_bytes(int(round(size_bytes)), digits=3))


def count_tick(count: float) -> str:
    return f"{int(round(count)):,}"


def legend_outside(axis: plt.Axes, title: str | None = None) -> None:
    """The legend right of the panel, outside the data."""
    handles, labels = axis.get_legend_handles_labels()
    if handles:
        axis.legend(handles, labels, title=title, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False,
                    fontsize="small", title_fontsize="small")


LEGEND_ROWS = 12  # a taller legend would reach the figure's title


def figure_legend(figure: plt.Figure, axes: Sequence[plt.Axes], title: str | None = None) -> None:
    """One legend for a figure of panels, right of them all and clear of the title above them
    (needs a constrained layout)."""
    entries: dict[str, object] = {}
    for axis in axes:
        for handle, label in zip(*axis.get_legend_handles_labels(), strict=True):
            entries.setdefault(label, handle)
    if entries:
        columns = 1 if len(entries) <= LEGEND_ROWS else math.ceil(len(entries) / LEGEND_ROWS)
        figure.legend(list(entries.values()), list(entries), title=title, loc="outside right center", frameon=False,
                      fontsize="small", title_fontsize="small", ncols=columns)


def panels(count: int, *, columns: int = 3, width: float = 4.2, height: float = 3.4,
           share_y: bool = False) -> tuple[plt.Figure, list[plt.Axes]]:
    """A constrained-layout grid of `count` panels (spare cells hidden)."""
    columns = max(1, min(count, columns))
    rows = math.ceil(count / columns)
    figure, grid = plt.subplots(rows, columns, figsize=(width * columns + 1.8, height * rows), squeeze=False,
                                layout="constrained", sharey=share_y)
    flat = list(grid.flat)
    for axis in flat[count:]:
        axis.set_visible(False)
    return figure, flat[:count]


def slug(text: str) -> str:
    return re.sub(r"[^0-9A-Za-z]+", "_", text).strip("_").lower() or "figure"


def save_figure(figure: plt.Figure, directory: Path, stem: str) -> list[Path]:
    """Write `figure` as ``<stem>.png`` and ``<stem>.pdf`` under `directory`; close it."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    paths = []
    for extension in FORMATS:
        path = directory / f"{stem}.{extension}"
        figure.savefig(path, dpi=DPI, bbox_inches="tight", metadata=_METADATA.get(extension))
        paths.append(path)
    plt.close(figure)
    return paths
