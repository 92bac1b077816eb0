"""SiPAC's experiments beside the paper: Fig. 7 (Table II), Figs. 10 and 11 (primitive traffic
patterns) and Fig. 13 (hybrid-parallel communication).

The paper states Figs. 7 and 13 in words and Fig. 11 as ranges; each statement is checked
against ddlsim's rows. Paper values: `configs/reference/papers.yaml`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ddlsim.papers import PaperReference
from ddlsim.report.reference import Comparison, has_role, ours_only, register_reference, stated

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


@register_reference("sipac_fig13", aliases=("sipac_hybrid",))
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
