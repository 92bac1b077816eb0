"""RAMP's collective-level figures beside the paper: Figs. 15 (steps), 18 (every op at 1 GB),
19 (bandwidth-matched baselines) and 21 (electrical all-reduce vs scale).

Rows come from `experiment=ramp_fig15` (``task=steps``) and ``ramp_fig18`` / ``ramp_fig19`` /
``ramp_fig21`` (``task=collective``); the paper's values, and which fabric plays which of its
systems, from `configs/reference/papers.yaml`. Each reference also draws its figure in the
common style and prints the tables behind it.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ddlsim.core.papers import PaperReference, load_papers
from ddlsim.report.reference import (
    COLLECTIVE_ROWS,
    STEPS_ROWS,
    Comparison,
    define_reference,
    has_role,
    holds,
    ours_only,
    role_mask,
    span,
    stated,
)

if TYPE_CHECKING:
    import pandas as pd

OPS = ("reduce_scatter", "all_gather", "all_reduce", "reduce", "broadcast", "gather", "scatter", "all_to_all")


def labelled(frame: pd.DataFrame) -> pd.DataFrame:
    """The rows that ran, with a `series` column naming each row's fabric option."""
    from ddlsim.report.columns import series_labels

    if "status" in frame:
        frame = frame[frame["status"].fillna("ok") == "ok"]
    return frame.assign(series=series_labels(frame))


def strategy(algorithm: str) -> str:
    """A legend entry for a strategy: the algorithm's display name (``torus2d(dim_x=8)`` keeps its brackets)."""
    from ddlsim.report.display import display_table

    return display_table().algorithm(algorithm)


# -- Fig. 15 --------------------------------------------------------------------------------------

def _steps(frame: pd.DataFrame) -> pd.DataFrame:
    table = labelled(frame)
    return table.assign(strategy=table["algorithm"].map(strategy))


def fig15_tables(frame: pd.DataFrame) -> str:
    table = _steps(frame)
    pivot = table.pivot_table(index="num_ranks", columns="strategy", values="num_steps", sort=False)
    return "Reduce-scatter algorithmic steps:\n" + pivot.to_string()


def fig15_figures(frame: pd.DataFrame, directory: Path) -> list[Path]:
    from ddlsim.report.charts import Panel, Quantity, line_chart

    return line_chart([Panel(_steps(frame))], Quantity("num_ranks", "number of nodes", "count"),
                      Quantity("num_steps", "algorithmic steps (reduce-scatter)"), "strategy", directory, "fig15",
                      legend_title="strategy", title="RAMP Fig. 15 reproduced (ddlsim)")


@define_reference("ramp_fig15", expects=STEPS_ROWS, figures=fig15_figures, tables=fig15_tables)
def ramp_fig15(frame: pd.DataFrame, paper: PaperReference) -> list[Comparison]:
    table = labelled(frame)
    ramp = table[role_mask(table, paper.systems("ramp"))].set_index("num_ranks")["num_steps"]
    ring = table[role_mask(table, paper.systems("ring")) & (table["algorithm"] == "ring")]
    ring = ring.set_index("num_ranks")["num_steps"]
    top = int(table["num_ranks"].max())
    at = lambda steps: str(int(steps[top])) if top in steps.index else "n/a"  # noqa: E731
    return [
        stated(paper.value("rampx_steps_max_scale"), at(ramp), f"RAMP-x steps at {top:,} nodes (x = 32)"),
        stated(paper.value("rampx_steps_never_above"), str(int(ramp.max())) if len(ramp) else "n/a"),
        stated(paper.value("ring_steps_max_scale"), at(ring), f"ring reduce-scatter steps at {top:,} nodes"),
    ]


# -- Figs. 18 and 19 ------------------------------------------------------------------------------

def best_times(frame: pd.DataFrame, keys: tuple[str, ...] = ()) -> pd.DataFrame:
    """The fastest algorithm of every system per op (and per `keys`), at the largest scale."""
    from ddlsim.report.plots_collectives import best_per_point

    table = labelled(frame)
    best = best_per_point(table, ["op", "num_ranks", "size_bytes", *keys])
    return best[best["num_ranks"] == best["num_ranks"].max()]


def speedups(best: pd.DataFrame, paper: PaperReference, keys: tuple[str, ...] = ()) -> pd.DataFrame:
    """RAMP's speed-up over each other system, per op (and `keys`); ``min_speedup`` over the best one."""
    ramp = best[role_mask(best, paper.systems("ramp"))]
    if ramp.empty:
        return ramp
    times = best.pivot_table(index=[*keys, "op"], columns="series", values="time_s", sort=False)
    ramp_label = ramp["series"].iloc[0]
    others = [label for label in times.columns if label != ramp_label]
    ratio = times[others].div(times[ramp_label], axis=0)
    ratio["min_speedup"] = ratio.min(axis=1)
    ratio["over"] = ratio[others].idxmin(axis=1)
    order = [op for op in OPS if op in ratio.index.get_level_values("op")]
    return ratio.reindex(order, level="op") if keys else ratio.loc[order]


def fig18_tables(frame: pd.DataFrame) -> str:
    best = best_times(frame)
    ops = [op for op in OPS if op in set(best["op"])]
    times = best.pivot_table(index="op", columns="series", values="time_s", sort=False).loc[ops] * 1e3
    algorithms = best.pivot(index="op", columns="series", values="algorithm").loc[ops, list(times.columns)]
    text = ("Completion time at 1 GB, 65,536 nodes (ms; fastest strategy per system):\n" + times.round(3).to_string()
            + "\n\nFastest strategy:\n" + algorithms.to_string())
    ratio = speedups(best, load_papers().reference("ramp_fig18"))
    if not ratio.empty:
        text += "\n\nRAMP speed-up:\n" + ratio.drop(columns="over").round(1).to_string()
    return text


def fig18_figures(frame: pd.DataFrame, directory: Path) -> list[Path]:
    from ddlsim.report.charts import Panel, Quantity, bar_chart
    from ddlsim.report.style import op_name

    best = best_times(frame)
    ops = [op for op in OPS if op in set(best["op"])]
    times = best.assign(op_order=best["op"].map(ops.index)).sort_values(["op_order"], kind="stable")
    paths = bar_chart([Panel(times)], "op", Quantity("time_s", "completion time at 1 GB, 65,536 nodes", "time_s"),
                      "series", directory, "fig18_time", category_label="collective", legend_title="system",
                      title="RAMP Fig. 18 reproduced (ddlsim): best strategy per system", category_name=op_name)
    ratio = speedups(best, load_papers().reference("ramp_fig18"))
    if ratio.empty:
        return paths
    speedup = ratio.reset_index()[["op", "min_speedup", "over"]].rename(columns={"min_speedup": "speedup"})
    return paths + bar_chart([Panel(speedup)], "op", Quantity("speedup", "speed-up of RAMP (x)"), "over", directory,
                             "fig18_speedup", category_label="collective", annotate=True, baseline=1.0,
                             legend_title="best other system", category_name=op_name,
                             title="RAMP Fig. 18 reproduced (ddlsim): RAMP speed-up, 1 GB, 65,536 nodes")


@define_reference("ramp_fig18", expects=COLLECTIVE_ROWS, figures=fig18_figures, tables=fig18_tables)
def ramp_fig18(frame: pd.DataFrame, paper: PaperReference) -> list[Comparison]:
    ratio = speedups(best_times(frame), paper)
    if ratio.empty or len(ratio.columns) < 3:
        return []
    minimum = ratio["min_speedup"]
    rows = [stated(paper.value("speedup_range"), span(minimum, digits=3))]
    for op in minimum.index:
        if op in paper.values:
            rows.append(stated(paper.value(op), span(minimum[op])))
        else:
            rows.append(ours_only(f"  {op}", span(minimum[op])))
    return rows


def _fig19_speedups(frame: pd.DataFrame, paper: PaperReference) -> pd.DataFrame:
    ratio = speedups(best_times(frame, ("node_bandwidth_bps",)), paper, ("node_bandwidth_bps",))
    return ratio.drop(columns=["min_speedup", "over"]) if not ratio.empty else ratio


def fig19_tables(frame: pd.DataFrame) -> str:
    ratio = _fig19_speedups(frame, load_papers().reference("ramp_fig19"))
    if ratio.empty:
        return ""
    ratio = ratio.rename(index=lambda value: f"{value / 1e12:g} Tbps" if isinstance(value, float) else value)
    return "RAMP speed-up over bandwidth-matched baselines (rows: node bandwidth, op):\n" + ratio.round(2).to_string()


def fig19_figures(frame: pd.DataFrame, directory: Path) -> list[Path]:
    from ddlsim.report.charts import Guide, Quantity, line_chart, panels_by
    from ddlsim.report.style import op_name

    ratio = _fig19_speedups(frame, load_papers().reference("ramp_fig19"))
    if ratio.empty:
        return []
    long = ratio.reset_index().melt(id_vars=["node_bandwidth_bps", "op"], var_name="system", value_name="speedup")
    long = long.assign(capacity_tbps=long["node_bandwidth_bps"] / 1e12, op_order=long["op"].map(list(OPS).index))
    long = long.sort_values(["op_order", "system"], kind="stable")
    return line_chart(panels_by(long, "op", op_name), Quantity("capacity_tbps", "node capacity (Tb/s)"),
                      Quantity("speedup", "speed-up of RAMP (x)"), "system", directory, "fig19", columns=4,
                      legend_title="RAMP vs", guides=[Guide(1.0)],
                      title="RAMP Fig. 19 reproduced (ddlsim): bandwidth-matched baselines, 1 GB, 65,536 nodes")


@define_reference("ramp_fig19", expects={**COLLECTIVE_ROWS, "node_bandwidth_bps": ()},
                    figures=fig19_figures, tables=fig19_tables)
def ramp_fig19(frame: pd.DataFrame, paper: PaperReference) -> list[Comparison]:
    from ddlsim.report.style import series_name

    best = best_times(frame, ("node_bandwidth_bps",))
    ratio = _fig19_speedups(frame, paper)
    if ratio.empty:
        return []
    rates = sorted(ratio.index.get_level_values("node_bandwidth_bps").unique())
    low, high = rates[0], rates[-1]

    def column(role: str) -> str | None:
        return next((label for label in ratio.columns if has_role(str(label), paper.systems(role))), None)

    fat, topo = column("fat_tree"), column("topoopt")
    every = ratio.stack()
    rows = [stated(paper.value("speedup_range"), f"{every.min():.2f} - {every.max():.3g}")]
    if fat and (high, "broadcast") in ratio.index:
        rows.append(stated(paper.value("fat_tree_broadcast"),
                           f"{ratio.loc[(high, 'broadcast'), fat]:.1f} (at {low / 1e12:g} Tbps: "
                           f"{ratio.loc[(low, 'broadcast'), fat]:.1f})",
                           f"vs Fat-Tree, broadcast, at {high / 1e12:g} Tbps"))
    if topo and {(high, "all_gather"), (high, "scatter")} <= set(ratio.index):
        rows.append(stated(paper.value("topoopt_all_gather_scatter"),
                           f"{ratio.loc[(high, 'all_gather'), topo]:.1f} / {ratio.loc[(high, 'scatter'), topo]:.1f}",
                           f"vs TopoOpt, all-gather / scatter, at {high / 1e12:g} Tbps"))
    if "all_to_all" in ratio.index.get_level_values("op"):
        a2a = ratio.xs("all_to_all", level="op").stack()
        rows.append(stated(paper.value("all_to_all_range"), f"{a2a.min():.3g} - {a2a.max():.3g}"))
    others = best[~role_mask(best, paper.systems("ramp"))]
    fastest = others.loc[others.groupby(["node_bandwidth_bps", "op"])["time_s"].idxmin()]
    counts = fastest[fastest["op"] != "broadcast"]["series"].value_counts()
    rows.append(stated(paper.value("best_baseline"),
                       ", ".join(f"{series_name(key)}: {value}" for key, value in counts.items())))
    return rows


# -- Fig. 21 --------------------------------------------------------------------------------------

def _fig21(frame: pd.DataFrame) -> pd.DataFrame:
    table = labelled(frame)
    return table.assign(h2t_over_h2h=table["transfer_s"] / table["latency_s"])


def fig21_tables(frame: pd.DataFrame) -> str:
    import pandas as pd

    from ddlsim.core import units

    table = _fig21(frame)
    pivot = table.assign(size=table["size_bytes"].map(units.format_size_bytes)).pivot_table(
        index=["size", "num_ranks"], columns="algorithm", values="time_s", sort=False)
    with pd.option_context("display.float_format", "{:.4g}".format, "display.width", 120):
        return "all-reduce time (s) on the SuperPod fat-tree at 2.4 Tbps per GPU:\n" + pivot.to_string()


def fig21_figures(frame: pd.DataFrame, directory: Path) -> list[Path]:
    from ddlsim.report.charts import Guide, Panel, Quantity, line_chart
    from ddlsim.report.style import size_tick

    table = _fig21(frame)
    table = table.assign(size=table["size_bytes"].map(size_tick),
                         strategy=table["algorithm"].map(strategy))
    gpus = Quantity("num_ranks", "number of GPUs", "count")
    chart = [Panel(table, "all-reduce completion time", y=Quantity("time_s", "completion time", "time_s")),
             Panel(table, "H2T / H2H (RAMP Fig. 22)", y=Quantity("h2t_over_h2h", "H2T / H2H"))]
    return line_chart(chart, gpus, chart[0].y, "strategy", directory, "fig21_electrical", variant="size", columns=2,
                      legend_title="strategy, message size", guides=[Guide(10.0, "H2T = 10 x H2H", panel=1)],
                      title="RAMP Fig. 21, electrical half: SuperPod fat-tree, 2.4 Tbps per GPU (1:1)")


@define_reference("ramp_fig21", expects=COLLECTIVE_ROWS, figures=fig21_figures, tables=fig21_tables)
def ramp_fig21(frame: pd.DataFrame, paper: PaperReference) -> list[Comparison]:
    """RAMP 8.4's statements about the electrical curves (the paper prints no electrical values)."""
    from ddlsim.core import units

    table = _fig21(frame)
    names = set(table["algorithm"])
    if not {"ring", "torus2d", "hierarchical"} <= names:
        return []
    top = table[table["num_ranks"] == table["num_ranks"].max()]
    sizes = sorted(top["size_bytes"].unique())
    largest = sizes[-1]

    def at(algorithm: str, size: int) -> pd.Series:
        return top[(top["algorithm"] == algorithm) & (top["size_bytes"] == size)].iloc[0]

    ring_grows = all((group.sort_values("num_ranks")["time_s"].diff().dropna() > 0).all()
                     for _, group in table[table["algorithm"] == "ring"].groupby("size_bytes"))
    ordering = all(at("ring", size).time_s > at("torus2d", size).time_s > at("hierarchical", size).time_s
                   for size in sizes)
    bound = sorted(f"{algorithm} {units.format_size_bytes(size)}" for algorithm in sorted(names) for size in sizes
                   if at(algorithm, size).h2t_over_h2h > 10)
    big = at("hierarchical", largest)
    share = (big.transfer_s + big.compute_s) / big.time_s
    value = paper.value
    rows = [
        stated(value("ring_grows"), holds(ring_grows)),
        stated(value("ordering"), holds(ordering)),
        stated(value("transfer_bound"), ", ".join(bound) or "none"),
        stated(value("hierarchical_share"), f"{share:.1%} ({holds(share > value('hierarchical_share').low)})",
               f"hierarchical at {units.format_size_bytes(largest)}: share of H2T and compute"),
    ]
    for size, key in ((sizes[0], "ring_over_hierarchical_small"), (largest, "ring_over_hierarchical_large")):
        ratio = at("ring", size).time_s / at("hierarchical", size).time_s
        where = f"ring / hierarchical time at {top['num_ranks'].iloc[0]:,} GPUs, {units.format_size_bytes(size)}"
        rows.append(stated(value(key), f"{ratio:.1f}", where))
    rows.append(ours_only("H2T/H2H of hierarchical at the largest size", f"{big.h2t_over_h2h:.0f}"))
    return rows
