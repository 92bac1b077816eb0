"""Which columns of a results table a figure plots: the series (fabric) and the x axis."""

from __future__ import annotations

import re

import pandas as pd

from ddlsim.report.display import display_table

# Candidate x axes of training figures, in order of preference (their labels: configs/display.yaml).
X_CANDIDATES = ("model_target_loss", "num_ranks", "model_params_total", "params_total", "model")

_FABRIC_OVERRIDE = re.compile(r"(?:^|\s)fabric=(\S+)")


def series_labels(frame: pd.DataFrame, column: str = "fabric") -> pd.Series:
    """One label per row: the ``fabric=`` option of its sweep job when known, else `column`.

    The option name tells variants of one fabric apart (``superpod`` and ``superpod_oversub``
    are both fabric ``superpod``).
    """
    labels = frame[column].astype(str) if column in frame else pd.Series("all", index=frame.index)
    if "overrides" in frame:
        chosen = frame["overrides"].fillna("").astype(str).str.extract(_FABRIC_OVERRIDE)[0]
        labels = chosen.where(chosen.notna(), labels)
    return labels


def pick_x(frame: pd.DataFrame, requested: str = "auto") -> str:
    """The x column: `requested`, or the first candidate that varies across rows."""
    if requested and requested != "auto":
        if requested not in frame:
            raise KeyError(f"x column {requested!r} is not in the results (columns: {', '.join(frame.columns)})")
        return requested
    for column in X_CANDIDATES:
        if column in frame and frame[column].nunique(dropna=True) > 1:
            return column
    for column in X_CANDIDATES:
        if column in frame:
            return column
    return "job" if "job" in frame else frame.columns[0]


def x_label(column: str) -> str:
    return display_table().column(column)


def _override_tokens(text: str) -> dict[str, str]:
    tokens = {}
    for item in str(text or "").split():
        key, _, value = item.partition("=")
        tokens[key] = value
    return tokens


def disambiguate(table: pd.DataFrame, keys: list[str]) -> pd.Series:
    """Series labels that tell apart rows sharing a label and `keys` (never drop such a row).

    Such rows come from jobs that differ in something other than the fabric option, e.g.
    ``fabric.bandwidth=100Gbps`` vs ``400Gbps``: those overrides are appended to the label.
    As a last resort the job number is.
    """
    labels = table["series"].astype(str)
    duplicated = table.assign(series=labels).duplicated(["series", *keys], keep=False)
    if not duplicated.any():
        return labels
    if "overrides" in table:
        tokens = table["overrides"].map(_override_tokens)
        varying: set[str] = set()
        for _, group in table[duplicated].assign(series=labels).groupby(["series", *keys], sort=False):
            dicts = list(tokens[group.index])
            for key in set().union(*dicts):
                if len({entry.get(key) for entry in dicts}) > 1:
                    varying.add(key)
        varying.discard("fabric")
        if varying:
            labels = labels + " " + tokens.map(lambda entry: ",".join(f"{key}={entry.get(key, '')}"
                                                                      for key in sorted(varying)))
    if table.assign(series=labels).duplicated(["series", *keys]).any() and "job" in table:
        labels = labels + " #" + table["job"].astype(str)
    return labels
