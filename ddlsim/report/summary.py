"""Readable text tables of a results table, one per kind of rows.

Each quantity column shows all its values in one unit, named in its header
(``time to accuracy (days)``), with four significant digits.
"""

from __future__ import annotations

import pandas as pd

from ddlsim.report.columns import disambiguate, series_labels, x_label
from ddlsim.report.plots_training import choose_baseline, training_table
from ddlsim.report.quantities import format_alike, format_in_unit, format_number
from ddlsim.report.table import format_table


def _with_unit(table: pd.DataFrame, column: str, kind: str, header: str, headers: dict[str, str]) -> None:
    """Format `column` in one unit picked from its values; the unit goes into its header."""
    unit, texts = format_in_unit(table[column], kind)
    table[column] = texts
    headers[column] = f"{header} ({unit})"


def _plain(value: object) -> str:
    return format_number(value) if isinstance(value, int | float) and not isinstance(value, bool) else str(value)


def training_summary(frame: pd.DataFrame, *, x: str = "auto", baseline: str = "") -> str:
    table, x_column, time_column = training_table(frame, x)
    lines = []
    if not table.empty:
        base_label = choose_baseline(table, baseline)
        base = table[table["series"] == base_label].set_index("x")[time_column]
        table = table.assign(speedup=table[time_column] / table["x"].map(base))
        headers = {"series": "fabric", "x": x_label(x_column), "num_ranks": "GPUs", "compute_source": "compute"}
        for column, kind, header in (("iteration_time_s", "time_s", "iteration"),
                                     ("time_to_accuracy_s", "time_s", "time to accuracy"),
                                     ("comm_fraction", "percent", "comm share"),
                                     ("speedup", "ratio", f"{base_label} speed-up")):
            if column in table:
                _with_unit(table, column, kind, header, headers)
        table["x"] = format_alike(list(table["x"]))
        order = ["series", "x", "num_ranks", "iteration_time_s", "time_to_accuracy_s", "comm_fraction", "speedup",
                 "compute_source"]
        present = {key: _plain for key in order if key in table and key != x_column}
        lines.append(format_table(table.to_dict("records"), present, headers))
    failed = frame[frame["status"].fillna("ok") != "ok"] if "status" in frame else frame.iloc[0:0]
    for _, row in failed.iterrows():
        lines.append(f"not run: {row.get('fabric', '?')} {row.get('overrides', '')}: {row['status']}")
    return "\n".join(lines)


def collective_summary(frame: pd.DataFrame) -> str:
    table = frame.assign(series=series_labels(frame))
    keys = [key for key in ("op", "num_ranks", "size_bytes", "algorithm") if key in table]
    table["series"] = disambiguate(table, keys)
    headers = {"series": "fabric", "num_ranks": "ranks"}
    for column, kind, header in (("size_bytes", "size_bytes", "size"), ("time_s", "time_s", "time")):
        if column in table:
            _with_unit(table, column, kind, header, headers)
    order = ("op", "series", "algorithm", "num_ranks", "size_bytes", "time_s")
    present = {key: _plain for key in order if key in table}
    return format_table(table.to_dict("records"), present, headers)


def hybrid_summary(frame: pd.DataFrame) -> str:
    table = frame.assign(series=series_labels(frame))
    table["series"] = disambiguate(table, [key for key in ("num_ranks", "cu_bandwidth_bps") if key in table])
    headers = {"series": "fabric", "num_ranks": "CUs"}
    for column, kind, header in (("cu_bandwidth_bps", "bandwidth_bps", "per-CU bandwidth"),
                                 ("time_s", "time_s", "job completion time")):
        if column in table:
            _with_unit(table, column, kind, header, headers)
    present = {key: _plain for key in ("series", "num_ranks", "cu_bandwidth_bps", "time_s") if key in table}
    return format_table(table.to_dict("records"), present, headers)
