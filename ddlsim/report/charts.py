"""Line and bar charts of any result table, in the common style (used by the reproduction scripts).

A chart is one or more panels; each panel plots a table's column `y` against `x` (lines) or
against categories (bars), one series per value of the `series` column. Colours come from the
display table (a fabric keeps its colour everywhere), axes are scaled from the data (a bar
chart whose values span decades becomes a dot chart on a log axis: log-scale bars mislead),
times are shown in a unit that suits them, and every chart is written as PNG and PDF.

    line_chart(panels_by(frame, "op", op_name), Quantity("size_bytes", "message size", "size_bytes"),
               Quantity("time_s", "completion time", "time_s"), "fabric", out, "fig18")
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from ddlsim.report.quantities import BANDWIDTH_UNITS, format_number, pick_unit, time_unit
from ddlsim.report.style import (
    LABEL_FONT_SIZE,
    bar_style,
    choose_scale,
    count_tick,
    figure_legend,
    line_style,
    panels,
    plain_tick,
    save_figure,
    series_name,
    series_styles,
    size_tick,
    style_axis,
)

KINDS = ("plain", "count", "time_s", "size_bytes", "bandwidth_bps")
_MAX_FIXED_TICKS = 12
_CROWDED_TICKS = 6  # more tick labels than this on one panel's x axis: every other one


@dataclass(frozen=True)
class Quantity:
    """A plotted column: its name, its axis label (without unit), the kind of number it holds
    (`KINDS`: times are shown in a unit picked from the data, sizes as ``1 MB``), and the axis
    scale (``auto`` chooses from the data's range; ``linear``, ``log`` or ``log2`` force one)."""

    column: str
    label: str
    kind: str = "plain"
    scale: str = "auto"

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"kind {self.kind!r} of {self.column} is not one of {', '.join(KINDS)}")


@dataclass(frozen=True)
class Panel:
    """One panel's rows and title; `x` or `y` replace the chart's quantities for this panel."""

    frame: pd.DataFrame
    title: str = ""
    x: Quantity | None = None
    y: Quantity | None = None


@dataclass(frozen=True)
class Guide:
    """A reference line in data units (seconds for times): ``h`` at y = `value`, ``ratio`` along
    y = `value` * x (``value=1`` is the identity); on every panel, or on panel `panel` only."""

    value: float
    text: str = ""
    kind: str = "h"
    panel: int | None = None


def panels_by(frame: pd.DataFrame, column: str, title: Callable[[object], str] = str) -> list[Panel]:
    """One panel per value of `column`, in order of appearance."""
    return [Panel(frame[frame[column] == value], title(value)) for value in dict.fromkeys(frame[column])]


def _unit(quantity: Quantity, values: pd.Series) -> tuple[str, float]:
    if quantity.kind == "time_s":
        return time_unit(values)
    if quantity.kind == "bandwidth_bps":
        return pick_unit(values, BANDWIDTH_UNITS)
    return "", 1.0


def _label(quantity: Quantity, unit: str) -> str:
    return f"{quantity.label} ({unit})" if unit else quantity.label


def _all(panels_: Sequence[Panel], quantity: Quantity) -> pd.Series:
    parts = [panel.frame[quantity.column] for panel in panels_ if quantity.column in panel.frame]
    return pd.concat(parts, ignore_index=True).astype(float) if parts else pd.Series(dtype=float)


def _scale(quantity: Quantity, values: pd.Series) -> str:
    return choose_scale(values) if quantity.scale == "auto" else quantity.scale


def _style_x(axis: plt.Axes, quantity: Quantity, values: pd.Series, unit: str, scale: str) -> None:
    ticks = sorted(values.dropna().unique())
    discrete = quantity.kind in ("size_bytes", "count") or scale.startswith("log")
    fixed = ticks if discrete and 1 < len(ticks) <= _MAX_FIXED_TICKS else None
    if fixed is not None and len(fixed) > _CROWDED_TICKS:
        fixed = fixed[::2]
    tick_label = size_tick if quantity.kind == "size_bytes" else count_tick if quantity.kind == "count" else plain_tick
    if quantity.kind in ("count", "size_bytes") and scale == "log" and fixed is not None:
        scale = "log2" if quantity.kind == "count" else "log"
    style_axis(axis, "x", values, _label(quantity, unit), scale=scale, ticks=fixed, tick_label=tick_label,
               from_zero=False)


def _draw_guides(axis: plt.Axes, guides: Sequence[Guide], index: int, x_divisor: float, y_divisor: float) -> None:
    for guide in guides:
        if guide.panel is not None and guide.panel != index:
            continue
        if guide.kind == "h":
            axis.axhline(guide.value / y_divisor, color="grey", linewidth=0.8, linestyle=":")
            if guide.text:
                where = axis.transData.transform((1.0, guide.value / y_divisor))
                height = axis.transAxes.inverted().transform(where)[1]  # a label near the top goes below its line
                axis.annotate(guide.text, (0.02, guide.value / y_divisor), xycoords=("axes fraction", "data"),
                              fontsize=LABEL_FONT_SIZE, color="dimgrey", va="top" if height > 0.85 else "bottom",
                              bbox={"facecolor": "white", "alpha": 0.8, "edgecolor": "none", "pad": 1})
        else:
            low, high = axis.get_xlim()
            xs = np.array([low, high])
            axis.plot(xs, guide.value * xs * x_divisor / y_divisor, color="grey", linewidth=0.8, linestyle=":",
                      label=guide.text or None, scalex=False, scaley=False)


def line_chart(chart_panels: Sequence[Panel], x: Quantity, y: Quantity, series: str, directory: Path, stem: str, *,
               title: str = "", legend_title: str = "", variant: str | None = None, guides: Sequence[Guide] = (),
               points: bool = False, columns: int = 3) -> list[Path]:
    """Lines (or points) of `y` against `x`, one per value of `series`, on each panel.

    With `variant`, a second column tells lines of one series apart by line style and marker
    (a message size, a node count) while the colour stays the series'.
    """
    labels = [label for panel in chart_panels for label in panel.frame[series].astype(str)]
    styles = series_styles(labels)
    variants = list(dict.fromkeys(v for panel in chart_panels for v in panel.frame[variant])) if variant else []
    figure, axes = panels(len(chart_panels), columns=columns)
    for index, (axis, panel) in enumerate(zip(axes, chart_panels, strict=True)):
        px, py = panel.x or x, panel.y or y
        same_y = [p for p in chart_panels if (p.y or y) == py]
        y_values = _all(same_y, py)
        x_unit, x_divisor = _unit(px, panel.frame[px.column])
        y_unit, y_divisor = _unit(py, y_values)
        y_scale = _scale(py, y_values / y_divisor)
        x_scale = _scale(px, panel.frame[px.column])
        frame = panel.frame
        if y_scale.startswith("log"):
            frame = frame[frame[py.column] > 0]
        groups = frame.groupby([series, variant] if variant else [series], sort=False)
        for key, rows in groups:
            label = str(key[0])
            style = dict(line_style(styles[label]))
            name = series_name(label)
            if variant:
                position = variants.index(key[1])
                style["linestyle"] = ("-", "--", ":", "-.")[position % 4]
                style["marker"] = ("o", "s", "^", "D", "v", "P")[position % 6]
                name = f"{name}, {key[1]}"
            rows = rows.sort_values(px.column)
            if points:
                axis.scatter(rows[px.column] / x_divisor, rows[py.column] / y_divisor, s=10, alpha=0.6,
                             color=style["color"], marker=style["marker"], label=name)
            else:
                axis.plot(rows[px.column] / x_divisor, rows[py.column] / y_divisor, label=name, markersize=5, **style)
        _style_x(axis, px, panel.frame[px.column] / x_divisor, x_unit, x_scale)
        style_axis(axis, "y", frame[py.column] / y_divisor, _label(py, y_unit), scale=y_scale)
        _draw_guides(axis, guides, index, x_divisor, y_divisor)
        axis.set_title(panel.title)
        axis.grid(True, which="major", alpha=0.3)
    _share_linear_x(axes, chart_panels, x)
    if title:
        figure.suptitle(title)
    figure_legend(figure, axes, legend_title or None)
    return save_figure(figure, directory, stem)


def _share_linear_x(axes: Sequence[plt.Axes], chart_panels: Sequence[Panel], x: Quantity) -> None:
    """Panels that plot against the same linear x get the same x range (a panel may hold fewer points)."""
    if any(panel.x not in (None, x) for panel in chart_panels) or any(axis.get_xscale() != "linear" for axis in axes):
        return
    values = _all(chart_panels, x).dropna()
    if len(values) and values.max() > values.min():
        margin = 0.04 * (values.max() - values.min())
        _, divisor = _unit(x, values)
        for axis in axes:
            axis.set_xlim((values.min() - margin) / divisor, (values.max() + margin) / divisor)


def _bar_layout(frame: pd.DataFrame, category: str, series: str, order: list) -> dict[tuple, tuple[float, float]]:
    """(category, series) -> (centre, width): the series present in a category share its slot."""
    slots = {}
    for position, value in enumerate(order):
        present = list(dict.fromkeys(frame.loc[frame[category] == value, series].astype(str)))
        width = 0.8 / max(len(present), 1)
        for offset, label in enumerate(present):
            slots[(value, label)] = (position - 0.4 + width * (offset + 0.5), width)
    return slots


def bar_chart(chart_panels: Sequence[Panel], category: str, y: Quantity, series: str, directory: Path, stem: str, *,
              category_label: str = "", title: str = "", legend_title: str = "", annotate: bool = False,
              baseline: float | None = None, columns: int = 3,
              category_name: Callable[[object], str] = str) -> list[Path]:
    """Grouped bars of `y` per category, one bar per series; a dot chart when `y` spans decades.

    `baseline` draws bars from that value (1 for speed-ups: a bar shows the ratio's direction on
    a log axis too) and a line at it. `annotate` writes each value above its bar.
    """
    labels = [label for panel in chart_panels for label in panel.frame[series].astype(str)]
    styles = series_styles(labels)
    values = _all(chart_panels, y)
    unit, divisor = _unit(y, values)
    scale = _scale(y, pd.concat([values / divisor, pd.Series([baseline] if baseline else [], dtype=float)]))
    dots = scale.startswith("log") and baseline is None
    bars = max(len(panel.frame) for panel in chart_panels)
    slots = max(panel.frame[category].nunique() for panel in chart_panels)
    width = (0.2 if dots else 0.4) * bars + 0.7 * slots
    figure, axes = panels(len(chart_panels), columns=columns, width=max(4.2, width))
    for axis, panel in zip(axes, chart_panels, strict=True):
        frame = panel.frame.assign(_series=panel.frame[series].astype(str))
        order = list(dict.fromkeys(frame[category]))
        slots = _bar_layout(frame, category, "_series", order)
        axis.set_yscale("log" if scale.startswith("log") else "linear")
        for label, rows in frame.groupby("_series", sort=False):
            centres = [slots[(value, label)][0] for value in rows[category]]
            widths = [slots[(value, label)][1] for value in rows[category]]
            heights = rows[y.column].to_numpy(dtype=float) / divisor
            if dots:
                axis.scatter(centres, heights, color=styles[label]["color"], marker=styles[label]["marker"], s=36,
                             label=series_name(label), zorder=3)
                for centre, height in zip(centres, heights, strict=True) if annotate else ():
                    axis.annotate(format_number(height, 3), (centre, height), textcoords="offset points",
                                  xytext=(0, 6), ha="center", fontsize=LABEL_FONT_SIZE)
                continue
            bottom = baseline or 0.0
            bars = axis.bar(centres, heights - bottom, width=widths, bottom=bottom, label=series_name(label),
                            **bar_style(styles[label]))
            if annotate:
                axis.bar_label(bars, labels=[format_number(value, 3) for value in heights], fontsize=LABEL_FONT_SIZE,
                               padding=2)
        axis.set_xticks(range(len(order)), [category_name(value) for value in order])
        axis.set_xlim(-0.6, len(order) - 0.4)
        axis.set_xlabel(category_label or category.replace("_", " "))
        shown = [*(frame[y.column] / divisor), *([baseline] if baseline else [])]
        style_axis(axis, "y", shown, _label(y, unit), scale="log" if scale.startswith("log") else "linear")
        if annotate:
            low, high = axis.get_ylim()
            below = scale.startswith("log") and min(shown) < (baseline or 0.0)  # labels under bars going down
            axis.set_ylim(low / 2.0 if below else low, high * (2.0 if scale.startswith("log") else 1.12))
        if baseline is not None:
            axis.axhline(baseline, color="black", linewidth=0.8)
        axis.set_title(panel.title)
        axis.grid(True, axis="y", which="major", alpha=0.3)
    if title:
        figure.suptitle(title)
    figure_legend(figure, axes, legend_title or None)
    return save_figure(figure, directory, stem)
