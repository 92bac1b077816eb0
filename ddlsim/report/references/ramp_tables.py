"""RAMP Tables 9 and 10 rebuilt by ddlsim's partitioners (``experiment=ramp_tables_9_10``), beside
the paper's tables as `configs/reference/papers.yaml` prints them.

The tables show every cell as ``ours / paper`` (the paper's rounding: 574M, 1.13B, 65.6K); the
side-by-side table gives, per table and column, how many rows equal the paper as printed and the
median and range of ours / paper.
"""

from __future__ import annotations

import statistics
from typing import TYPE_CHECKING

from ddlsim.core.papers import PaperReference, load_papers
from ddlsim.report.reference import Comparison, define_reference

if TYPE_CHECKING:
    import pandas as pd

SOURCES = {"table9": "ramp_table9", "table10": "ramp_table10"}
TITLES = {"table9_loss": "Table 9 from the target loss alone",  # the tables `task=ramp_tables` builds
          "table9_architecture": "Table 9 from the paper's architecture",
          "table10_fill": "Table 10, local batch filling memory",
          "table10_paper_batch": "Table 10, the paper's batch per GPU"}


def short(value: float) -> str:
    """Print like the paper: 574M, 1.13B, 65.6K."""
    if value == 0:
        return "0"
    for suffix, scale in (("T", 1e12), ("B", 1e9), ("M", 1e6), ("K", 1e3)):
        if abs(value) >= scale:
            return f"{value / scale:.3g}{suffix}"
    return f"{value:.4g}"


def _tables(frame: pd.DataFrame) -> list[tuple[str, pd.DataFrame]]:
    return [(table, frame[frame["table"] == table]) for table in TITLES if (frame["table"] == table).any()]


def render_tables(frame: pd.DataFrame) -> str:
    """Each rebuilt table as ``ours / paper`` cells, then its per-column agreement."""
    parts = []
    for table, part in _tables(frame):
        columns = list(dict.fromkeys(part["column"]))
        cells = [[short(cell.ours) + ("" if cell.paper != cell.paper else f" / {short(cell.paper)}")
                  for cell in rows.set_index("column").loc[columns].itertuples()]
                 for _, rows in part.groupby("row", sort=True)]
        widths = [max(len(c), *(len(row[i]) for row in cells)) for i, c in enumerate(columns)]
        lines = [f"{TITLES[table]}  (ours / paper)", "  ".join(c.rjust(w) for c, w in zip(columns, widths))]
        lines += ["  ".join(v.rjust(w) for v, w in zip(row, widths)) for row in cells]
        lines.append("per-column agreement: rows equal to the paper as printed; median and range of ours / paper")
        lines += [f"  {column:>17}: {text}" for column, text in agreement(part)]
        parts.append("\n".join(lines))
    return "\n\n".join(parts)


def agreement(part: pd.DataFrame) -> list[tuple[str, str]]:
    """(column, 'k/n exact, ours/paper median m, range a-b') for the columns the paper prints."""
    lines = []
    for column in dict.fromkeys(part["column"]):
        cells = part[(part["column"] == column) & part["paper"].notna()]
        if cells.empty:
            continue
        ratios = [ours / paper for ours, paper in zip(cells["ours"], cells["paper"]) if paper]
        median = f"{statistics.median(ratios):.3g}" if ratios else "-"
        span = f"{min(ratios):.3g}-{max(ratios):.3g}" if ratios else "-"
        lines.append((column, f"{int(cells['agrees_as_printed'].sum())}/{len(cells)} exact, "
                              f"ours/paper median {median}, range {span}"))
    return lines


@define_reference("ramp_tables_9_10", expects={"table": (), "column": (), "ours": (), "paper": ()},
                    tables=render_tables)
def ramp_tables_9_10(frame: pd.DataFrame, paper: PaperReference) -> list[Comparison]:
    papers = load_papers()
    rows = []
    for table, part in _tables(frame):
        source = papers.table(SOURCES[table.split("_")[0]]).source
        for column, text in agreement(part):
            rows.append(Comparison(f"{TITLES[table]}: {column}", "as printed", text, source))
    return rows


# -- Tables 3 and 4 (network cost and power) -----------------------------------------------------

COST_TABLES = {"table3": ("ramp_table3", "Table 3"), "table4": ("ramp_table4", "Table 4")}


def _label(row: pd.Series) -> str:
    return f"{row['system']} (oversubscription {row['oversubscription']:g})"


def render_cost_tables(frame: pd.DataFrame) -> str:
    parts = []
    for table, (_, title) in COST_TABLES.items():
        part = frame[frame["table"] == table].dropna(axis=1, how="all").drop(
            columns=["table", "status", "job", "overrides"], errors="ignore")
        parts.append(f"RAMP {title} recomputed (paper_<column>: as printed)\n"
                     + part.to_string(index=False, float_format=lambda value: f"{value:.4g}"))
    return "\n\n".join(parts)


@define_reference("ramp_tables_3_4", expects={"table": ("table3", "table4"), "system": ()}, tables=render_cost_tables)
def ramp_tables_3_4(frame: pd.DataFrame, paper: PaperReference) -> list[Comparison]:
    import math

    papers = load_papers()
    ramp = papers.table("ramp_table3_ramp")
    printed_ramp = ramp.rows[0]
    rows = []
    for table, (source_name, title) in COST_TABLES.items():
        source = papers.table(source_name).source
        for _, row in frame[frame["table"] == table].iterrows():
            for key in row.index:
                if not key.startswith("paper_") or key[len("paper_"):] not in row.index:
                    continue
                printed, ours = row[key], row[key[len("paper_"):]]
                if isinstance(printed, float) and math.isnan(printed):
                    continue
                rows.append(Comparison(f"{title}: {_label(row)} {key[len('paper_'):]}", f"{printed:.4g}",
                                       f"{ours:.4g}", source))
    for _, row in frame[(frame["table"] == "table3") & frame["system"].str.startswith("ramp")].iterrows():
        end = "low" if "$600" in row["system"] else "high"
        for column in ("total_busd", "usd_per_gbps", "transceiver_share"):
            rows.append(Comparison(f"Table 3: {row['system']} {column}", f"{printed_ramp[f'{column}_{end}']:.4g}",
                                   f"{row[column]:.4g}", ramp.source))
    return rows
