"""Readable text tables of a results table, one per kind of rows."""

from __future__ import annotations

import math

import pandas as pd

from ddlsim import units
from ddlsim.report.columns import disambiguate, series_labels, x_label
from ddlsim.report.plots_training import choose_baseline, training_table
from ddlsim.report.table import format_table


def _time(value: float) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if value >= 2 * 86400:
        return f"{value / 86400:.4g}days"
    return units.format_time_s(value)


def _percent(value: float) -> str:
    return "-" if value is None or math.isnan(value) else f"{100 * value:.3g}%"


def _times(value: float) -> str:
    return "-" if value is None or math.isnan(value) else f"{value:.3g}x"


def training_summary(frame: pd.DataFrame, *, x: str = "auto", baseline: str = "") -> str:
    table, x_column, time_column = training_table(frame, x)
    lines = []
    if not table.empty:
        base_label = choose_baseline(table, baseline)
        base = table[table["series"] == base_label].set_index("x")[time_column]
        table = table.assign(speedup=table[time_column] / table["x"].map(base))
        columns = {
            "series": str,
            "x": lambda value: f"{value:g}" if isinstance(value, float) else str(value),
            "num_ranks": lambda value: f"{value:g}" if isinstance(value, float) else str(value),  # float beside NaN
            "iteration_time_s": _time,
            "time_to_accuracy_s": _time,
            "comm_fraction": _percent,
            "speedup": _times,
            "compute_source": str,
        }
        present = {key: value for key, value in columns.items() if key in table and key != x_column}
        headers = {"series": "fabric", "x": x_label(x_column), "num_ranks": "GPUs", "iteration_time_s": "iteration",
                   "time_to_accuracy_s": "time to accuracy", "comm_fraction": "comm share",
                   "speedup": f"{base_label} speed-up", "compute_source": "compute"}
        lines.append(format_table(table.to_dict("records"), present, headers))
    failed = frame[frame["status"].fillna("ok") != "ok"] if "status" in frame else frame.iloc[0:0]
    for _, row in failed.iterrows():
        lines.append(f"not run: {row.get('fabric', '?')} {row.get('overrides', '')}: {row['status']}")
    return "\n".join(lines)


def collective_summary(frame: pd.DataFrame) -> str:
    table = frame.assign(series=series_labels(frame))
    keys = [key for key in ("op", "num_ranks", "size_bytes", "algorithm") if key in table]
    table["series"] = disambiguate(table, keys)
    columns = {"op": str, "series": str, "algorithm": str, "num_ranks": str, "size_bytes": units.format_size_bytes,
               "time_s": units.format_time_s}
    present = {key: value for key, value in columns.items() if key in table}
    return format_table(table.to_dict("records"), present, {"series": "fabric"})


def hybrid_summary(frame: pd.DataFrame) -> str:
    table = frame.assign(series=series_labels(frame))
    table["series"] = disambiguate(table, [key for key in ("num_ranks", "cu_bandwidth_bps") if key in table])
    columns = {"series": str, "num_ranks": str, "cu_bandwidth_bps": units.format_bandwidth_bps,
               "time_s": units.format_time_s}
    present = {key: value for key, value in columns.items() if key in table}
    return format_table(table.to_dict("records"), present, {"series": "fabric"})
