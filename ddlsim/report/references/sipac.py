"""SiPAC's experiments beside the paper: Fig. 7 (Table II), Figs. 10 and 11 (primitive traffic
patterns) and Fig. 13 (hybrid-parallel communication).

The paper states Figs. 7 and 13 in words and Fig. 11 as ranges; each statement is checked
against ddlsim's rows. Paper values: `configs/reference/papers.yaml`.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ddlsim.core.papers import PaperReference
from ddlsim.report.reference import Comparison, define_reference, has_role, ours_only, stated

if TYPE_CHECKING:
    import pandas as pd


def system_of(label: str, paper: PaperReference, roles: tuple[str, ...]) -> str:
    """The paper's system a row label plays (its role name), or the label itself."""
    return next((role for role in roles if has_role(label, paper.systems(role))), label)


def _hybrid_jct(frame: pd.DataFrame, paper: PaperReference) -> pd.DataFrame:
    """JCT in seconds indexed by (CUs, per-CU bandwidth), one column per system."""
    from ddlsim.report.columns import series_labels

    table = frame.assign(series=series_labels(frame))
    roles = ("sipac", "bcube", "superpod", "torus")
    table["system"] = table["series"].map(lambda label: system_of(label, paper, roles))
    return table.pivot_table(index=["num_ranks", "cu_bandwidth_bps"], columns="system", values="time_s")


@define_reference("sipac_fig13", expects={"cu_bandwidth_bps": (), "num_ranks": (), "time_s": ()},
                    aliases=("sipac_hybrid",))
def sipac_fig13(frame: pd.DataFrame, paper: PaperReference) -> list[Comparison]:
    """SiPAC VI-B.2 states its Fig. 13 in words; each statement is checked against our numbers."""
    jct = _hybrid_jct(frame, paper)
    if not {"sipac", "bcube", "superpod", "torus"} <= set(jct.columns):
        return []
    value = paper.value
    comparisons = []
    scales = sorted(jct.index.get_level_values(0).unique())
    for scale in scales:
        part = jct.xs(scale, level=0).sort_index()
        low, high = part.iloc[0], part.iloc[-1]
        gain = low / high
        bandwidths = f"{part.index[0] / 1e9:g} -> {part.index[-1] / 1e9:g} Gb/s"
        lowest = f"p={scale}, {part.index[0] / 1e9:g} Gb/s"
        if scale == scales[0]:
            trio = low[["bcube", "superpod", "sipac"]]
            detail = f"SuperPod {low['superpod'] * 1e3:.3g} ms, SiPAC {low['sipac'] * 1e3:.3g} ms"
            comparisons.append(stated(value("similar_at_low_bandwidth"),
                                      f"{trio.max() / trio.min():.3g}x apart ({detail})",
                                      f"{lowest}: BCube, SuperPod, SiPAC JCT"))
        else:
            comparisons.append(stated(value("sipac_worse_at_low_bandwidth"),
                                      f"SiPAC {low['sipac'] / low['superpod']:.3g}x SuperPod's JCT",
                                      f"{lowest}: SiPAC vs SuperPod"))
            for others, name in ((["superpod"], "SuperPod"), (["bcube", "superpod", "torus"], "every other system")):
                faster = part[part["sipac"] < part[others].min(axis=1)]
                comparisons.append(stated(value("sipac_faster_soon"),
                                          f"{faster.index[0] / 1e9:g} Gb/s" if len(faster) else "never",
                                          f"p={scale}: SiPAC faster than {name} from"))
        comparisons += [
            stated(value("sipac_keeps_decreasing"), f"{gain['sipac']:.3g}x",
                   f"p={scale}, {bandwidths}: SiPAC JCT reduction"),
            stated(value("superpod_little"), f"{gain['superpod']:.3g}x",
                   f"p={scale}, {bandwidths}: SuperPod JCT reduction"),
            stated(value("torus_bcube_between"), f"{gain['torus']:.3g}x / {gain['bcube']:.3g}x",
                   f"p={scale}, {bandwidths}: torus / BCube JCT reduction"),
            ours_only(f"p={scale}, {part.index[-1] / 1e9:g} Gb/s: SiPAC speed-up over SuperPod / torus / BCube",
                      f"{high['superpod'] / high['sipac']:.3g}x / {high['torus'] / high['sipac']:.3g}x / "
                      f"{high['bcube'] / high['sipac']:.3g}x"),
        ]
    return comparisons


# -- Fig. 7 ---------------------------------------------------------------------------------------

def _fig7_slices(frame: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(JCT vs CUs at the 100 MB point or the largest size below it, JCT vs size at 1,024 CUs or the most)."""
    sizes = sorted(frame["size_bytes"].unique())
    at_size = max([size for size in sizes if size <= 10**8] or sizes[:1])
    counts = sorted(frame["num_ranks"].unique())
    at_count = 1024 if 1024 in counts else counts[-1]
    return frame[frame["size_bytes"] == at_size], frame[frame["num_ranks"] == at_count]


def fig7_tables(frame: pd.DataFrame) -> str:
    by_cus, _ = _fig7_slices(frame)
    size = by_cus["size_bytes"].iloc[0] / 1e6
    pivot = by_cus.pivot_table(index="num_ranks", columns="algorithm", values="time_s", sort=False) * 1e3
    return f"Fig. 7, all-reduce JCT (ms) at {size:g} MB:\n" + pivot.round(3).to_string()


def fig7_figures(frame: pd.DataFrame, directory: Path) -> list[Path]:
    from ddlsim.report.charts import Panel, Quantity, line_chart

    by_cus, by_size = _fig7_slices(frame)
    time = Quantity("time_s", "all-reduce JCT", "time_s")
    sweeps = [Panel(by_cus, f"{by_cus['size_bytes'].iloc[0] / 1e6:g} MB messages",
                    x=Quantity("num_ranks", "CUs", "count")),
              Panel(by_size, f"{by_size['num_ranks'].iloc[0]:,} CUs", x=Quantity("size_bytes", "message size",
                                                                                   "size_bytes"))]
    return line_chart(sweeps, sweeps[0].x, time, "algorithm", directory, "fig7", legend_title="algorithm",
                      title="SiPAC Fig. 7 reproduced (Table II, alpha = 1 us, 512 Gb/s)")


@define_reference("sipac_fig7", expects={"size_bytes": (), "time_s": (), "sipco_radix": ()},
                    figures=fig7_figures, tables=fig7_tables)
def sipac_fig7(frame: pd.DataFrame, paper: PaperReference) -> list[Comparison]:
    by_cus, _ = _fig7_slices(frame)
    curves = by_cus.pivot_table(index="num_ranks", columns="algorithm", values="time_s")
    if not {"sipco", "ring"} <= set(curves.columns) or len(curves) < 2:
        return []
    growth = curves.iloc[-1] / curves.iloc[0]
    low, high = curves.index[0], curves.index[-1]
    return [stated(paper.value("sipco_flat"), f"sipco x{growth['sipco']:.2f}, ring x{growth['ring']:.2f}",
                   f"Fig. 7: JCT growth from {low:,} to {high:,} CUs at "
                   f"{by_cus['size_bytes'].iloc[0] / 1e6:g} MB (SiPCO vs ring)")]


# -- Figs. 10 and 11 -------------------------------------------------------------------------------

PATTERNS = ("one_to_all", "all_to_one", "all_to_all")


def _at_1mb(frame: pd.DataFrame, meaning: str) -> pd.DataFrame:
    part = frame[(frame["size_bytes"] == 10**6) & (frame["size_meaning"] == meaning)]
    patterns = [pattern for pattern in PATTERNS if pattern in set(part["pattern"])]
    return part.pivot_table(index="pattern", columns="fabric", values="time_s", sort=False).loc[patterns]


def fig10_11_tables(frame: pd.DataFrame) -> str:
    parts = [f"Fig. 11, JCT at 1 MB {meaning} (us):\n" + (_at_1mb(frame, meaning) * 1e6).round(2).to_string()
             for meaning in dict.fromkeys(frame["size_meaning"])]
    return "\n\n".join(parts)


def fig10_11_figures(frame: pd.DataFrame, directory: Path) -> list[Path]:
    from ddlsim.report.charts import Panel, Quantity, bar_chart, line_chart, panels_by
    from ddlsim.report.style import op_name

    per_flow = frame[frame["size_meaning"] == "per_flow"]
    paths = line_chart(panels_by(per_flow, "pattern", op_name), Quantity("size_bytes", "message size per flow",
                                                                         "size_bytes"),
                       Quantity("time_s", "JCT", "time_s"), "fabric", directory, "fig10", legend_title="system",
                       title="SiPAC Fig. 10 reproduced: 512 CUs, 2,048 Gb/s per CU")
    at_1mb = frame[frame["size_bytes"] == 10**6]
    meanings = [Panel(at_1mb[at_1mb["size_meaning"] == meaning], f"1 MB {meaning.replace('_', ' ')}")
                for meaning in dict.fromkeys(at_1mb["size_meaning"])]
    return paths + bar_chart(meanings, "pattern", Quantity("time_s", "JCT at 1 MB", "time_s"), "fabric", directory,
                             "fig11", category_label="traffic pattern", legend_title="system", category_name=op_name,
                             title="SiPAC Fig. 11 reproduced: 512 CUs at 1 MB")


@define_reference("sipac_fig10_11", expects={"pattern": (), "size_meaning": (), "time_s": ()},
                    figures=fig10_11_figures, tables=fig10_11_tables)
def sipac_fig10_11(frame: pd.DataFrame, paper: PaperReference) -> list[Comparison]:
    roles = ("sipac", "superpod", "torus", "bcube")
    rows = []
    for meaning in dict.fromkeys(frame["size_meaning"]):
        at = _at_1mb(frame, meaning)
        systems = {system_of(label, paper, roles): label for label in at.columns}
        if "sipac" not in systems:
            continue
        for role in roles[1:]:
            if role in systems:
                ratio = at[systems[role]] / at[systems["sipac"]]
                value = paper.value(f"speedup_{role}")
                rows.append(stated(value, " / ".join(f"{ratio[k]:.2f}" for k in at.index),
                                   f"{value.quantity} {meaning} ({', '.join(at.index)})"))
    return rows
