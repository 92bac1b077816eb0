"""RAMP's training and collective-sweep experiments beside the paper: Figs. 16, 17, 18 and 20.

ddlsim's numbers come from the result rows of `experiment=ramp_fig16` (alias ``ramp_megatron``),
``ramp_fig17`` (``ramp_dlrm``) and ``ramp_fig18_20`` (``ramp_collectives``); the paper's from
`configs/reference/papers.yaml`, where the roles say which fabrics play the paper's systems.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ddlsim.core.papers import PaperReference
from ddlsim.report.reference import (
    COLLECTIVE_ROWS,
    TRAINING_ROWS,
    Comparison,
    define_reference,
    ours_only,
    role_mask,
    span,
    stated,
)

if TYPE_CHECKING:
    import pandas as pd


def _training_parts(frame: pd.DataFrame, x: str = "auto") -> tuple[pd.DataFrame, pd.DataFrame, str]:
    from ddlsim.report.plots_training import choose_baseline, speedup_table, training_table

    table, _, time_column = training_table(frame, x)
    if table.empty:
        return table, table, time_column
    baseline = choose_baseline(table, "ramp")
    return table, speedup_table(table, time_column, baseline), time_column


@define_reference("ramp_fig16", expects={**TRAINING_ROWS, "shape_source": ()}, aliases=("ramp_megatron",))
def ramp_fig16(frame: pd.DataFrame, paper: PaperReference) -> list[Comparison]:
    table, speedups, _ = _training_parts(frame)
    if table.empty:
        return []
    baselines = paper.systems("baselines")
    paper_baselines = speedups[role_mask(speedups, baselines)]
    ramp = table[role_mask(table, paper.systems("ramp"))]
    others = table[role_mask(table, baselines)]
    dp_dominant = paper_baselines[paper_baselines["x"] >= 1.67] if "x" in paper_baselines else paper_baselines
    # Training-time reduction if compute were twice as fast (no overlap: communication unchanged).
    faster = table.assign(gain=table["iteration_time_s"] / (table["iteration_time_s"] - table["compute_time_s"] / 2))
    share_ratio = others.assign(ratio=others["comm_fraction"] / others["x"].map(
        ramp.set_index("x")["comm_fraction"]))
    value = paper.value
    return [
        stated(value("speedup_over_baselines"), span(paper_baselines["speedup"])),
        stated(value("speedup_dp_dominant"), span(dp_dominant["speedup"])),
        ours_only("RAMP speed-up over every other fabric", span(speedups["speedup"]), "extra fabrics"),
        stated(value("ramp_comm_share"), span(ramp["comm_fraction"], 100, "%")),
        stated(value("baseline_comm_share"), span(others["comm_fraction"], 100, "%")),
        stated(value("share_ratio"), span(share_ratio["ratio"])),
        stated(value("faster_compute_ramp"), span(faster[faster["series"].isin(ramp["series"])]["gain"])),
        stated(value("faster_compute_baselines"), span(faster[faster["series"].isin(others["series"])]["gain"])),
    ]


@define_reference("ramp_fig17", expects={**TRAINING_ROWS, "num_tables": ()}, aliases=("ramp_dlrm",))
def ramp_fig17(frame: pd.DataFrame, paper: PaperReference) -> list[Comparison]:
    table, speedups, _ = _training_parts(frame)
    if table.empty:
        return []
    fat, topo = (speedups[role_mask(speedups, paper.systems(role))] for role in ("fat_tree", "topoopt"))
    share = {role: table[role_mask(table, paper.systems(role))]["comm_fraction"]
             for role in ("ramp", "fat_tree", "topoopt")}
    value = paper.value
    return [
        stated(value("speedup_topoopt_max"), span(topo["speedup"].max())),
        stated(value("speedup_fat_tree_max"), span(fat["speedup"].max())),
        ours_only("RAMP speed-up over TopoOpt (range)", span(topo["speedup"])),
        ours_only("RAMP speed-up over Fat-Tree (range)", span(fat["speedup"])),
        stated(value("ramp_overhead"), span(share["ramp"], 100, "%")),
        stated(value("topoopt_overhead"), span(share["topoopt"], 100, "%")),
        stated(value("fat_tree_overhead"), span(share["fat_tree"], 100, "%")),
    ]


def _best_collectives(frame: pd.DataFrame) -> pd.DataFrame:
    from ddlsim.report.plots_collectives import best_per_point

    table = best_per_point(frame, ["op", "num_ranks", "size_bytes"])
    return table[table["num_ranks"] == table.groupby("series")["num_ranks"].transform("max")]


@define_reference("ramp_fig18_20", expects=COLLECTIVE_ROWS, aliases=("ramp_collectives",))
def ramp_fig18_20(frame: pd.DataFrame, paper: PaperReference) -> list[Comparison]:
    import pandas as pd

    table = _best_collectives(frame)
    is_ramp = role_mask(table, paper.systems("ramp"))
    ramp = table[is_ramp].set_index(["op", "size_bytes"])
    others = table[~is_ramp]
    if ramp.empty or others.empty:
        return []
    fastest_other = others.groupby(["op", "size_bytes"])["time_s"].min()
    speedup = (fastest_other / ramp["time_s"]).dropna()
    at_1gb = speedup.xs(10**9, level="size_bytes") if 10**9 in speedup.index.get_level_values(1) else pd.Series()
    value = paper.value
    comparisons = [stated(value("speedup_range"), span(at_1gb))]
    for op in ("reduce_scatter", "all_to_all"):
        comparisons.append(stated(value(op), span(at_1gb.get(op, float("nan")))))
    for op in at_1gb.index:
        if op not in ("reduce_scatter", "all_to_all"):
            comparisons.append(ours_only(f"  {op}", span(at_1gb[op])))
    electrical = others[role_mask(others, paper.systems("electrical")) & (others["op"] == "all_reduce")]
    ratios = electrical.assign(speedup=electrical["time_s"].to_numpy() / electrical["size_bytes"].map(
        ramp.xs("all_reduce", level="op")["time_s"]).to_numpy()) if "all_reduce" in ramp.index else electrical
    comparisons.append(stated(value("allreduce_speedup_electrical"),
                              span(ratios.get("speedup", pd.Series())) + " (best strategy)"))
    if ("all_reduce", 10 * 10**9) in ramp.index:
        ten = ramp.loc[("all_reduce", 10 * 10**9)]
        best_electrical = ratios[ratios["size_bytes"] == 10 * 10**9]["speedup"].min()
        comparisons += [
            stated(value("allreduce_10gb_speedup"), span(best_electrical)),
            stated(value("allreduce_10gb_transfer_share"), span(ten["transfer_s"] / ten["time_s"], 100, "%")),
            stated(value("allreduce_10gb_compute_share"), span(ten["compute_s"] / ten["time_s"], 100, "%")),
        ]
    return comparisons
