"""RAMP Figs. 22 and 23 beside the paper: the H2T/H2H ratio of an all-reduce and the reduction
compute of a 1 GB reduce-scatter, against the number of GPUs.

Rows come from `experiment=ramp_fig22` and ``ramp_fig23`` (``task=collective``): ring-based
strategies on the 1:1 SuperPod fat-tree, RAMP-x on RAMP at 2.4 Tbps per node. The paper prints no
values for Fig. 22 and one for Fig. 23 (RAMP 8.4.1-8.4.2, `configs/reference/papers.yaml`).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ddlsim.core.papers import PaperReference
from ddlsim.report.reference import COLLECTIVE_ROWS, Comparison, define_reference, holds, ours_only, span, stated
from ddlsim.report.references.ramp_collectives import labelled, strategy

if TYPE_CHECKING:
    import pandas as pd

# Which strategy the figure draws on which fabric: ring-based on the fat-tree, RAMP-x on RAMP.
SYSTEM_OF = {"ring": "superpod", "hierarchical": "superpod", "rampx": "ramp"}
NEGLIGIBLE_H2H = 10.0  # RAMP 8.4.1: "The H2H latency becomes negligible when the H2T/H2H ratio is > 10"


def _drawn(frame: pd.DataFrame, op: str) -> pd.DataFrame:
    """The rows of `op` whose strategy runs on the system the paper draws it on."""
    table = labelled(frame)
    table = table[table["op"] == op]
    drawn = [SYSTEM_OF.get(algorithm) == fabric for algorithm, fabric in zip(table["algorithm"], table["fabric"])]
    return table[drawn]


def _fig22(frame: pd.DataFrame) -> pd.DataFrame:
    table = _drawn(frame, "all_reduce")
    return table.assign(h2t_over_h2h=table["transfer_s"] / table["latency_s"])


def fig22_tables(frame: pd.DataFrame) -> str:
    import pandas as pd

    from ddlsim.core import units

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


@define_reference("ramp_fig22", expects=COLLECTIVE_ROWS, figures=fig22_figures, tables=fig22_tables)
def ramp_fig22(frame: pd.DataFrame, paper: PaperReference) -> list[Comparison]:
    """RAMP 8.4.1's statements about Fig. 22."""
    from ddlsim.core import units

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


def _fig23(frame: pd.DataFrame) -> pd.DataFrame:
    table = _drawn(frame, "reduce_scatter")
    return table.assign(strategy=table["algorithm"].map(strategy))


def fig23_tables(frame: pd.DataFrame) -> str:
    import pandas as pd

    table = _fig23(frame)
    pivot = table.pivot_table(index="num_ranks", columns="strategy", values="compute_s", sort=False)
    with pd.option_context("display.float_format", "{:.4g}".format, "display.width", 120):
        return "reduce-scatter reduction compute (s), A100 half precision:\n" + pivot.to_string()


def fig23_figures(frame: pd.DataFrame, directory: Path) -> list[Path]:
    from ddlsim.report.charts import Panel, Quantity, line_chart

    table = _fig23(frame)
    compute = Quantity("compute_s", "reduction compute time", "time_s")
    return line_chart([Panel(table, "reduce-scatter", y=compute)], Quantity("num_ranks", "number of GPUs", "count"),
                      compute, "strategy", directory, "fig23", legend_title="strategy",
                      title="RAMP Fig. 23: compute to sum a reduce-scatter's message, one source vs x sources")


@define_reference("ramp_fig23", expects=COLLECTIVE_ROWS, figures=fig23_figures, tables=fig23_tables)
def ramp_fig23(frame: pd.DataFrame, paper: PaperReference) -> list[Comparison]:
    """RAMP 8.4.2's speed-up of x-to-1 over 2-to-1 reductions."""
    table = _fig23(frame)
    if not {"ring", "rampx"} <= set(table["algorithm"]):
        return []
    compute = table.pivot_table(index="num_ranks", columns="algorithm", values="compute_s")
    speedup = compute["ring"] / compute["rampx"]
    value = paper.value
    return [
        stated(value("speedup"), f"{speedup.max():.3g}x",
               "largest ring / RAMP-x reduction compute over the GPUs swept"),
        ours_only(f"ring / RAMP-x reduction compute at {speedup.index.max():,} GPUs",
                  f"{speedup.loc[speedup.index.max()]:.3g}x"),
        ours_only("ring / RAMP-x over all GPU counts", span(speedup)),
    ]
