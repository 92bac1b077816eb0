"""Readable text tables of a results table, one per kind of rows.

Each quantity column shows all its values in one unit, named in its header
(``time to accuracy (days)``), with four significant digits.
"""

from __future__ import annotations

import pandas as pd

from ddlsim.report.columns import disambiguate, series_labels, x_label
from ddlsim.report.plots_training import choose_baseline, training_table
from ddlsim.report.quantities import format_alike
from ddlsim.report.table import quantity_table


def training_summary(frame: pd.DataFrame, *, x: str = "auto", baseline: str = "") -> str:
    table, x_column, time_column = training_table(frame, x)
    lines = []
    if not table.empty:
        base_label = choose_baseline(table, baseline)
        base = table[table["series"] == base_label].set_index("x")[time_column]
        table = table.assign(speedup=table[time_column] / table["x"].map(base), x=format_alike(list(table["x"])))
        kinds = {"series": None, "x": None, "num_ranks": None, "iteration_time_s": "time_s",
                 "time_to_accuracy_s": "time_s", "comm_fraction": "percent", "speedup": "ratio",
                 "compute_source": None}
        headers = {"series": "fabric", "x": x_label(x_column), "num_ranks": "GPUs", "iteration_time_s": "iteration",
                   "time_to_accuracy_s": "time to accuracy", "comm_fraction": "comm share",
                   "speedup": f"{base_label} speed-up", "compute_source": "compute"}
        present = {key: kind for key, kind in kinds.items() if key in table and key != x_column}
        lines.append(quantity_table(table.to_dict("records"), present, headers))
    failed = frame[frame["status"].fillna("ok") != "ok"] if "status" in frame else frame.iloc[0:0]
    for _, row in failed.iterrows():
        lines.append(f"not run: {row.get('fabric', '?')} {row.get('overrides', '')}: {row['status']}")
    return "\n".join(lines)


def collective_summary(frame: pd.DataFrame) -> str:
    table = frame.assign(series=series_labels(frame))
    keys = [key for key in ("op", "num_ranks", "size_bytes", "algorithm") if key in table]
    table["series"] = disambiguate(table, keys)
    kinds = {"op": None, "series": None, "algorithm": None, "num_ranks": None, "size_bytes": "size_bytes",
             "time_s": "time_s"}
    present = {key: kind for key, kind in kinds.items() if key in table}
    headers = {"series": "fabric", "num_ranks": "ranks", "size_bytes": "size", "time_s": "time"}
    return quantity_table(table.to_dict("records"), present, headers)


def hybrid_summary(frame: pd.DataFrame) -> str:
    table = frame.assign(series=series_labels(frame))
    table["series"] = disambiguate(table, [key for key in ("num_ranks", "cu_bandwidth_bps") if key in table])
    kinds = {"series": None, "num_ranks": None, "cu_bandwidth_bps": "bandwidth_bps", "time_s": "time_s"}
    present = {key: kind for key, kind in kinds.items() if key in table}
    headers = {"series": "fabric", "num_ranks": "CUs", "cu_bandwidth_bps": "per-CU bandwidth",
               "time_s": "job completion time"}
    return quantity_table(table.to_dict("records"), present, headers)
