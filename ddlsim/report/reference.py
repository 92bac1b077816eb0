"""Side-by-side tables: what a seed paper reports next to what ddlsim computed.

The paper's numbers are quoted from its text (RAMP section 8, SiPAC section VI-B), with the
place they come from; ours are computed from the result rows. A reference is chosen by name
(``report.reference`` in an experiment config, or ``ddlsim-report --reference``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import pandas as pd

from ddlsim.report.plots_training import choose_baseline, speedup_table, training_table
from ddlsim.report.quantities import format_number
from ddlsim.report.table import format_table


@dataclass(frozen=True)
class Comparison:
    quantity: str
    paper: str
    ours: str
    source: str


def _span(values: pd.Series, scale: float = 1.0, suffix: str = "x") -> str:
    values = pd.Series(values, dtype=float).dropna()
    if values.empty:
        return "n/a"
    low, high = values.min() * scale, values.max() * scale
    if math.isclose(low, high):
        return f"{format_number(low, 3)}{suffix}"
    return f"{format_number(low, 3)}-{format_number(high, 3)}{suffix}"


def _is(label: str, *prefixes: str) -> bool:
    return any(label.startswith(prefix) for prefix in prefixes)


def _series_mask(frame: pd.DataFrame, *prefixes: str) -> pd.Series:
    """Rows whose series starts with one of `prefixes`, as a boolean mask (also when `frame` is
    empty: an empty object Series would select columns instead of rows)."""
    return frame["series"].map(lambda s: _is(s, *prefixes)).astype(bool)


FAT_TREE = ("superpod", "fat_tree", "fattree")
TOPOOPT = ("topoopt",)


def _training_parts(frame: pd.DataFrame, x: str = "auto") -> tuple[pd.DataFrame, pd.DataFrame, str]:
    table, _, time_column = training_table(frame, x)
    if table.empty:
        return table, table, time_column
    baseline = choose_baseline(table, "ramp")
    speedups = speedup_table(table, time_column, baseline)
    return table, speedups, time_column


def ramp_megatron(frame: pd.DataFrame) -> list[Comparison]:
    table, speedups, _ = _training_parts(frame)
    if table.empty:
        return []
    paper_baselines = speedups[_series_mask(speedups, *FAT_TREE, *TOPOOPT)]
    ramp = table[_series_mask(table, "ramp")]
    others = table[_series_mask(table, *FAT_TREE, *TOPOOPT)]
    dp_dominant = paper_baselines[paper_baselines["x"] >= 1.67] if "x" in paper_baselines else paper_baselines
    # Training-time reduction if compute were twice as fast (no overlap: communication unchanged).
    faster = table.assign(gain=table["iteration_time_s"] / (table["iteration_time_s"] - table["compute_time_s"] / 2))
    share_ratio = others.assign(ratio=others["comm_fraction"] / others["x"].map(
        ramp.set_index("x")["comm_fraction"]))
    fig = "RAMP 8.1, Fig. 16"
    return [
        Comparison("RAMP speed-up over Fat-Tree and TopoOpt", "1.01-16.7x", _span(paper_baselines["speedup"]), fig),
        Comparison("  where DP dominates (CE >= 1.67)", "1.01-5.2x", _span(dp_dominant["speedup"]), fig),
        Comparison("RAMP speed-up over every other fabric", "-", _span(speedups["speedup"]), "extra fabrics"),
        Comparison("RAMP communication share", "0.6-11%", _span(ramp["comm_fraction"], 100, "%"), fig),
        Comparison("Fat-Tree and TopoOpt communication share", "23.8-94.6%",
                   _span(others["comm_fraction"], 100, "%"), fig),
        Comparison("their share / RAMP's share", "7.7-34x", _span(share_ratio["ratio"]), fig),
        Comparison("2x faster compute: RAMP training-time reduction", "1.76-1.94x",
                   _span(faster[faster["series"].isin(ramp["series"])]["gain"]), fig),
        Comparison("2x faster compute: Fat-Tree and TopoOpt reduction", "1.02-1.6x",
                   _span(faster[faster["series"].isin(others["series"])]["gain"]), fig),
    ]


def ramp_dlrm(frame: pd.DataFrame) -> list[Comparison]:
    table, speedups, _ = _training_parts(frame)
    if table.empty:
        return []
    fig = "RAMP 8.1, Fig. 17"
    by = {name: speedups[_series_mask(speedups, *prefixes)]
          for name, prefixes in (("fat", FAT_TREE), ("topo", TOPOOPT))}
    share = {name: table[_series_mask(table, *prefixes)]["comm_fraction"]
             for name, prefixes in (("ramp", ("ramp",)), ("fat", FAT_TREE), ("topo", TOPOOPT))}
    return [
        Comparison("RAMP speed-up over TopoOpt (max)", "7.8x", _span(by["topo"]["speedup"].max()), fig),
        Comparison("RAMP speed-up over Fat-Tree (max)", "58x", _span(by["fat"]["speedup"].max()), fig),
        Comparison("RAMP speed-up over TopoOpt (range)", "-", _span(by["topo"]["speedup"]), "ours only"),
        Comparison("RAMP speed-up over Fat-Tree (range)", "-", _span(by["fat"]["speedup"]), "ours only"),
        Comparison("RAMP network overhead", "<1%", _span(share["ramp"], 100, "%"), fig),
        Comparison("TopoOpt (OCS) network overhead", "12.5-87%", _span(share["topo"], 100, "%"), fig),
        Comparison("Fat-Tree (EPS) network overhead", "52-98%", _span(share["fat"], 100, "%"), fig),
    ]


ELECTRICAL = ("superpod", "fat_tree", "torus")


def _best_collectives(frame: pd.DataFrame) -> pd.DataFrame:
    from ddlsim.report.plots_collectives import best_per_point

    table = best_per_point(frame, ["op", "num_ranks", "size_bytes"])
    return table[table["num_ranks"] == table.groupby("series")["num_ranks"].transform("max")]


def ramp_collectives(frame: pd.DataFrame) -> list[Comparison]:
    table = _best_collectives(frame)
    ramp = table[_series_mask(table, "ramp")].set_index(["op", "size_bytes"])
    others = table[~_series_mask(table, "ramp")]
    if ramp.empty or others.empty:
        return []
    fastest_other = others.groupby(["op", "size_bytes"])["time_s"].min()
    speedup = (fastest_other / ramp["time_s"]).dropna()
    at_1gb = speedup.xs(10**9, level="size_bytes") if 10**9 in speedup.index.get_level_values(1) else pd.Series()
    comparisons = [Comparison("RAMP speed-up at 1 GB, max scale, over the best other system", "7.6-171x",
                              _span(at_1gb), "RAMP 8.2, Fig. 18")]
    for op, paper in (("reduce_scatter", "7.6x"), ("all_to_all", "171x")):
        comparisons.append(Comparison(f"  {op}", paper, _span(at_1gb.get(op, float("nan"))), "RAMP 8.2, Fig. 18"))
    for op in at_1gb.index:
        if op not in ("reduce_scatter", "all_to_all"):
            comparisons.append(Comparison(f"  {op}", "-", _span(at_1gb[op]), "ours only"))
    electrical = others[_series_mask(others, *ELECTRICAL) & (others["op"] == "all_reduce")]
    ratios = electrical.assign(speedup=electrical["time_s"].to_numpy() / electrical["size_bytes"].map(
        ramp.xs("all_reduce", level="op")["time_s"]).to_numpy()) if "all_reduce" in ramp.index else electrical
    fig = "RAMP 8.2, Fig. 20"
    comparisons.append(Comparison("all-reduce: RAMP speed-up over the electrical systems, all sizes",
                                  "9-3.26e4x (every strategy)", _span(ratios.get("speedup", pd.Series())) +
                                  " (best strategy)", fig))
    if ("all_reduce", 10 * 10**9) in ramp.index:
        ten = ramp.loc[("all_reduce", 10 * 10**9)]
        best_electrical = ratios[ratios["size_bytes"] == 10 * 10**9]["speedup"].min()
        comparisons += [
            Comparison("all-reduce 10 GB: RAMP speed-up over the best electrical system", "7.3x",
                       _span(best_electrical), fig),
            Comparison("all-reduce 10 GB on RAMP: transfer (H2T) share", "44%",
                       _span(ten["transfer_s"] / ten["time_s"], 100, "%"), fig),
            Comparison("all-reduce 10 GB on RAMP: reduction compute share", "56%",
                       _span(ten["compute_s"] / ten["time_s"], 100, "%"), fig),
        ]
    return comparisons


def _hybrid_jct(frame: pd.DataFrame) -> pd.DataFrame:
    """JCT in seconds indexed by (CUs, per-CU bandwidth), one column per system."""
    from ddlsim.report.columns import series_labels

    table = frame.assign(series=series_labels(frame))
    kinds = {label: next((kind for kind in ("sipac", "bcube", "superpod", "torus") if label.startswith(kind)), label)
             for label in table["series"].unique()}
    table["system"] = table["series"].map(kinds)
    return table.pivot_table(index=["num_ranks", "cu_bandwidth_bps"], columns="system", values="time_s")


def sipac_hybrid(frame: pd.DataFrame) -> list[Comparison]:
    """SiPAC VI-B.2 states its Fig. 13 in words; each statement is checked against our numbers."""
    jct = _hybrid_jct(frame)
    needed = {"sipac", "bcube", "superpod", "torus"}
    if not needed <= set(jct.columns):
        return []
    fig = "SiPAC VI-B.2, Fig. 13"
    comparisons = []
    scales = sorted(jct.index.get_level_values(0).unique())
    for scale in scales:
        part = jct.xs(scale, level=0).sort_index()
        low, high = part.iloc[0], part.iloc[-1]
        gain = low / high
        bandwidths = f"{part.index[0] / 1e9:g} -> {part.index[-1] / 1e9:g} Gb/s"
        if scale == scales[0]:
            trio = low[["bcube", "superpod", "sipac"]]
            detail = f"SuperPod {low['superpod'] * 1e3:.3g} ms, SiPAC {low['sipac'] * 1e3:.3g} ms"
            comparisons.append(Comparison(f"p={scale}, {part.index[0] / 1e9:g} Gb/s: BCube, SuperPod, SiPAC JCT",
                                          "similar", f"{trio.max() / trio.min():.3g}x apart ({detail})", fig))
        else:
            comparisons.append(Comparison(f"p={scale}, {part.index[0] / 1e9:g} Gb/s: SiPAC vs SuperPod",
                                          "SiPAC worse", f"SiPAC {low['sipac'] / low['superpod']:.3g}x SuperPod's JCT",
                                          fig))
            for others, name in ((["superpod"], "SuperPod"), (["bcube", "superpod", "torus"], "every other system")):
                faster = part[part["sipac"] < part[others].min(axis=1)]
                comparisons.append(Comparison(f"p={scale}: SiPAC faster than {name} from", "soon (as bandwidth grows)",
                                              f"{faster.index[0] / 1e9:g} Gb/s" if len(faster) else "never", fig))
        comparisons += [
            Comparison(f"p={scale}, {bandwidths}: SiPAC JCT reduction", "keeps decreasing", f"{gain['sipac']:.3g}x",
                       fig),
            Comparison(f"p={scale}, {bandwidths}: SuperPod JCT reduction", "little (flat at p=512)",
                       f"{gain['superpod']:.3g}x", fig),
            Comparison(f"p={scale}, {bandwidths}: torus / BCube JCT reduction", "better than SuperPod, less than SiPAC",
                       f"{gain['torus']:.3g}x / {gain['bcube']:.3g}x", fig),
            Comparison(f"p={scale}, {part.index[-1] / 1e9:g} Gb/s: SiPAC speed-up over SuperPod / torus / BCube", "-",
                       f"{high['superpod'] / high['sipac']:.3g}x / {high['torus'] / high['sipac']:.3g}x / "
                       f"{high['bcube'] / high['sipac']:.3g}x", "ours only"),
        ]
    return comparisons


REFERENCES: dict[str, Callable[[pd.DataFrame], list[Comparison]]] = {
    "ramp_megatron": ramp_megatron,
    "ramp_dlrm": ramp_dlrm,
    "ramp_collectives": ramp_collectives,
    "sipac_hybrid": sipac_hybrid,
}


def register_reference(name: str) -> Callable[[Callable[[pd.DataFrame], list[Comparison]]], Callable]:
    def decorator(function: Callable[[pd.DataFrame], list[Comparison]]) -> Callable:
        REFERENCES[name] = function
        return function

    return decorator


def side_by_side(frame: pd.DataFrame, reference: str) -> tuple[str, pd.DataFrame]:
    """The comparison table as text and as rows, for reference `reference`."""
    if reference not in REFERENCES:
        raise KeyError(f"unknown reference {reference!r}; choose one of {', '.join(sorted(REFERENCES))}")
    comparisons = REFERENCES[reference](frame)
    rows = [{"quantity": item.quantity, "paper": item.paper, "ddlsim": item.ours, "source": item.source}
            for item in comparisons]
    text = format_table(rows, {"quantity": str, "paper": str, "ddlsim": str, "source": str}) if rows else ""
    return text, pd.DataFrame(rows, columns=["quantity", "paper", "ddlsim", "source"])
