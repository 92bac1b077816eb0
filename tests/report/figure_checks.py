"""What every ddlsim figure must satisfy, checked on the drawn (Agg) figure.

`figure_problems` lists what is wrong: a panel with data but no axis label, several series and no
legend, a legend over the data or over a title, titles over each other, an exponent tick label
("4.3x10^0"), a bar label smaller than 7 pt or outside its panel.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
from matplotlib.text import Annotation

MIN_LABEL_POINTS = 7.0


def _has_data(axis: plt.Axes) -> bool:
    return bool(axis.lines or axis.collections or axis.patches)


def _series_labels(figure: plt.Figure) -> set[str]:
    labels: set[str] = set()
    for axis in figure.axes:
        labels |= {label for label in axis.get_legend_handles_labels()[1] if not label.startswith("_")}
    return labels


def _visible_texts(items: list) -> list:
    return [item for item in items if item is not None and item.get_visible() and item.get_text().strip()]


def figure_problems(figure: plt.Figure, name: str = "figure") -> list[str]:
    figure.canvas.draw()
    renderer = figure.canvas.get_renderer()
    problems = []
    panels = [axis for axis in figure.axes if axis.get_visible() and _has_data(axis)]
    if not panels:
        problems.append(f"{name}: no panel has data")
    for index, axis in enumerate(panels):
        where = f"{name} panel {index} ({axis.get_title() or 'untitled'})"
        if not axis.get_xlabel().strip():
            problems.append(f"{where}: no x label")
        if not axis.get_ylabel().strip():
            problems.append(f"{where}: no y label")
        for tick in [*axis.get_xticklabels(which="both"), *axis.get_yticklabels(which="both")]:
            if "\\times" in tick.get_text() or "\u00d7" in tick.get_text():
                problems.append(f"{where}: exponent tick label {tick.get_text()!r}")
        box = axis.get_window_extent(renderer)
        for text in axis.texts:
            if isinstance(text, Annotation) and text.get_text().strip():
                if text.get_fontsize() < MIN_LABEL_POINTS:
                    problems.append(f"{where}: label {text.get_text()!r} is {text.get_fontsize():.1f} pt")
                extent = text.get_window_extent(renderer)
                if extent.y1 > box.y1 + 1 or extent.y0 < box.y0 - 1:
                    problems.append(f"{where}: label {text.get_text()!r} outside its panel")
    legends = [legend for legend in [*figure.legends, *(axis.get_legend() for axis in figure.axes)] if legend]
    if len(_series_labels(figure)) > 1 and not legends:
        problems.append(f"{name}: several series and no legend")
    titles = _visible_texts([figure._suptitle, *(axis.title for axis in panels)])
    for legend in legends:
        extent = legend.get_window_extent(renderer)
        for axis in panels:
            if extent.overlaps(axis.get_window_extent(renderer)):
                problems.append(f"{name}: legend over the data of panel {axis.get_title() or 'untitled'}")
        for title in titles:
            if extent.overlaps(title.get_window_extent(renderer)):
                problems.append(f"{name}: legend over the title {title.get_text()!r}")
    for first, one in enumerate(titles):
        for other in titles[first + 1:]:
            if one.get_window_extent(renderer).overlaps(other.get_window_extent(renderer)):
                problems.append(f"{name}: titles {one.get_text()!r} and {other.get_text()!r} overlap")
    return problems
