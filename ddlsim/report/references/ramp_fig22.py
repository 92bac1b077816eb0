"""RAMP Fig. 22 beside the paper: the H2T/H2H ratio of an all-reduce against the number of GPUs.

Rows come from `experiment=ramp_fig22` (``task=collective``): ring and hierarchical rings on the
1:1 SuperPod fat-tree, RAMP-x on RAMP at 2.4 Tbps per node. The paper prints no values for this
figure; its statements (RAMP 8.4.1) are in `configs/reference/papers.yaml`.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ddlsim.papers import PaperReference
from ddlsim.report.reference import COLLECTIVE_ROWS, Comparison, holds, ours_only, register_reference, span, stated
from ddlsim.report.references.ramp_collectives import labelled, strategy

if TYPE_CHECKING:
    import pandas as pd

# Which strategy the figure draws on which fabric: ring-based on the fat-tree, RAMP-x on RAMP.
SYSTEM_OF = {"ring": "superpod", "hierarchical": "superpod", "rampx": "ramp"}
NEGLIGIBLE_H2H = 10.0  # RAMP 8.4.1: "The H2H latency becomes negligible when the H2T/H2H ratio is > 10"


def _fig22(frame: pd.DataFrame) -> pd.DataFrame:
    table = labelled(frame)
    table = table[table["op"] == "all_reduce"]
    drawn = [SYSTEM_OF.get(algorithm) == fabric for algorithm, fabric in zip(table["algorithm"], table["fabric"])]
    table = table[drawn]
    return table.assign(h2t_over_h2h=table["transfer_s"] / table["latency_s"])


def fig22_tables(frame: pd.DataFrame) -> str:
    import pandas as pd

    from ddlsim import units

    table = _fig22(frame)
    pivot = table.assign(size=table["size_bytes"].map(units.format_size_bytes)).pivot_table(
        index="num_ranks", columns=["algorithm", "size"], values="h2t_over_h2h", sort=False)
    with pd.option_context("display.float_format", "{:.3g}".format, "display.width", 160):
        title = "all-reduce H2T / H2H (ring-based on the 1:1 SuperPod, RAMP-x on RAMP at 2.4 Tbps):\n"
        return title + pivot.to_string()


def fig22_figures(frame: pd.DataFrame, directory: Path) -> list[Path]:
    from ddlsim.report.charts import Guide, Panel, Quantity, line_chart
    from ddlsim.report.style import size_tick

    table = _fig22(frame)
    table = table.assign(size=table["size_bytes"].map(size_tick), strategy=table["algorithm"].map(strategy))
    ratio = Quantity("h2t_over_h2h", "H2T / H2H")
    chart = [Panel(table, "H2T / H2H", y=ratio)]
    return line_chart(chart, Quantity("num_ranks", "number of GPUs", "count"), ratio, "strategy", directory, "fig22",
                      variant="size", legend_title="strategy, message size",
                      guides=[Guide(NEGLIGIBLE_H2H, "H2T = 10 x H2H")],
                      title="RAMP Fig. 22: H2T/H2H of an all-reduce, SuperPod rings and RAMP-x at 2.4 Tbps")


@register_reference("ramp_fig22", expects=COLLECTIVE_ROWS, figures=fig22_figures, tables=fig22_tables)
def ramp_fig22(frame: pd.DataFrame, paper: PaperReference) -> list[Comparison]:
    """RAMP 8.4.1's statements about Fig. 22."""
    from ddlsim import units

    table = _fig22(frame)
    if not {"ring", "rampx"} <= set(table["algorithm"]):
        return []
    ratio = table.pivot_table(index="num_ranks", columns=["algorithm", "size_bytes"], values="h2t_over_h2h")
    value = paper.value
    ring = ratio["ring"]
    ring_falls = bool((ring.diff().dropna() < 0).all().all())
    ramp = ratio["rampx"]
    ramp_spread = ramp.max() / ramp.min()
    largest = max(table["size_bytes"])
    top = ratio.loc[ratio.index.max()]
    negligible = sorted(f"{algorithm} {units.format_size_bytes(size)}" for (algorithm, size), r in top.items()
                        if r > NEGLIGIBLE_H2H)
    rows = [
        stated(value("ring_falls"), holds(ring_falls)),
        stated(value("ramp_flat"), f"max / min over scale {span(ramp_spread)}, ring {span(ring.max() / ring.min())} "
               f"({holds(bool((ramp_spread < 10).all()))} within one decade)"),
        stated(value("largest_negligible"), ", ".join(negligible) or "none",
               f"at {ratio.index.max():,} GPUs, H2T/H2H > 10 (largest message {units.format_size_bytes(largest)})"),
    ]
    for algorithm in ("ring", "hierarchical", "rampx"):
        if algorithm in top:
            rows.append(ours_only(f"{strategy(algorithm)} H2T/H2H at {ratio.index.max():,} GPUs, 1 MB to largest",
                                  span(top[algorithm], suffix="")))
    return rows
