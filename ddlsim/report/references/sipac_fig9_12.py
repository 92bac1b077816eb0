"""SiPAC Fig. 9 (component counts against network size) and Fig. 12 (DL workloads' communication per
topology and all-reduce algorithm) beside the paper.

The paper states both figures in words (VI-A.2, VI-B.3); each statement is checked against
ddlsim's rows. Paper values: `configs/reference/papers.yaml`.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING

from ddlsim.core.papers import PaperReference
from ddlsim.report.reference import Comparison, define_reference, ours_only, span, stated
from ddlsim.report.references.sipac import system_of

if TYPE_CHECKING:
    import pandas as pd

COUNTS = ("links", "transceivers", "switches")
TRADITIONAL = ("fat_tree", "dragonfly")
SYSTEM_NAMES = {"sipac": "SiPAC", "bcube": "BCube", "superpod": "SuperPod", "torus": "2D torus"}
NEAR_CUS = 1000  # the size at which Fig. 9's statements about switches are read


# -- Fig. 9 ----------------------------------------------------------------------------------------

def _nearest(frame: pd.DataFrame, topology: str, cus: int) -> pd.Series | None:
    """The row of `topology` whose size is nearest to `cus` (on a log scale), or None."""
    rows = frame[frame["topology"] == topology]
    if rows.empty:
        return None
    distance = (rows["num_ranks"].astype(float) / cus).map(lambda ratio: abs(math.log(ratio)))
    return rows.loc[distance.idxmin()]


def _largest(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.loc[frame.groupby("topology", sort=False)["num_ranks"].idxmax()]


def fig9_tables(frame: pd.DataFrame) -> str:
    columns = ["num_ranks", "switch_radix", *(f"{name}_per_cu" for name in (*COUNTS, "lasers", "lanes"))]
    near = [row for topology in dict.fromkeys(frame["topology"]) if (row := _nearest(frame, topology, NEAR_CUS))
            is not None]
    import pandas as pd

    table = pd.DataFrame(near).set_index("topology")[columns].round(4)
    largest = _largest(frame).set_index("topology")[["num_ranks", *COUNTS, "lasers", "lanes"]]
    return (f"Fig. 9, per CU near {NEAR_CUS:,} CUs:\n{table.to_string()}\n\n"
            f"Fig. 9, counts at the largest size built:\n{largest.to_string()}")


def fig9_figures(frame: pd.DataFrame, directory: Path) -> list[Path]:
    from ddlsim.report.charts import Panel, Quantity, line_chart

    cus = Quantity("num_ranks", "network size (CUs)", "count", scale="log")
    sweeps = [Panel(frame, name, y=Quantity(name, name, "count", scale="log")) for name in COUNTS]
    return line_chart(sweeps, cus, sweeps[0].y, "topology", directory, "fig9", legend_title="topology",
                      title="SiPAC Fig. 9 reproduced: component counts against network size")


def _per_cu(row: pd.Series | None, name: str) -> float:
    return float("nan") if row is None else float(row[f"{name}_per_cu"])


@define_reference("sipac_fig9", expects={"topology": (), "links": (), "transceivers": (), "switches": ()},
                  figures=fig9_figures, tables=fig9_tables)
def sipac_fig9(frame: pd.DataFrame, paper: PaperReference) -> list[Comparison]:
    value = paper.value
    near = {topology: _nearest(frame, topology, NEAR_CUS) for topology in dict.fromkeys(frame["topology"])}
    sipac3, sipac2 = near.get("sipac_l3"), near.get("sipac_l2")
    comparisons = []
    for levels in (2, 3):
        trio = [_per_cu(near.get(f"{family}_l{levels}"), "links") for family in ("sipac", "bcube", "torus")]
        comparisons.append(stated(value("links_equal"), " / ".join("-" if math.isnan(v) else f"{v:g}" for v in trio),
                                  f"links per CU, L = n = {levels}: SiPAC / BCube / torus"))
    superpod = near.get("superpod")
    comparisons.append(stated(value("links_below_superpod"),
                              f"{_per_cu(sipac2, 'links') / _per_cu(superpod, 'links'):.3g} / "
                              f"{_per_cu(sipac3, 'links') / _per_cu(superpod, 'links'):.3g}"))
    largest = _largest(frame).set_index("topology")["transceivers_per_cu"]
    sipac_most = max(value for topology, value in largest.items() if topology.startswith("sipac"))
    others = largest[[not topology.startswith("sipac") for topology in largest.index]]
    comparisons.append(stated(value("fewer_transceivers"),
                              f"SiPAC {sipac_most:g} at most; others {span(others, suffix='')} "
                              f"({'holds' if sipac_most < others.min() else 'differs'})"))
    fat_tree = near.get("fat_tree")
    if sipac3 is not None and fat_tree is not None:
        comparisons.append(stated(value("switches_like_fat_tree"),
                                  f"{int(sipac3['switches'])} / {int(fat_tree['switches'])} "
                                  f"({int(sipac3['num_ranks']):,} and {int(fat_tree['num_ranks']):,} CUs)"))
    if sipac3 is not None and sipac2 is not None:
        comparisons.append(stated(value("l2_fewer_switches"),
                                  f"{int(sipac2['switches'])} / {int(sipac3['switches'])} at radix "
                                  f"{int(sipac2['switch_radix'])} / {int(sipac3['switch_radix'])}"))
    for topology in TRADITIONAL:
        row = near.get(topology)
        if row is not None and sipac3 is not None:
            ratios = [_per_cu(row, name) / _per_cu(sipac3, name) for name in ("links", "switches", "transceivers")]
            comparisons.append(stated(value("traditional_tradeoff"), " / ".join(f"{ratio:.3g}x" for ratio in ratios),
                                      f"{topology} per CU / SiPAC(L=3) per CU near {NEAR_CUS:,} CUs: "
                                      "links / switches / transceivers"))
    return comparisons


# -- Fig. 12 ---------------------------------------------------------------------------------------

def _jct(frame: pd.DataFrame, paper: PaperReference) -> pd.DataFrame:
    """JCT indexed by (model, CUs, system), one column per algorithm."""
    from ddlsim.report.columns import series_labels

    table = frame.assign(series=series_labels(frame))
    roles = ("sipac", "bcube", "superpod", "torus")
    table["system"] = table["series"].map(lambda label: system_of(label, paper, roles))
    return table.pivot_table(index=["model", "num_ranks", "system"], columns="algorithm", values="time_s")


def fig12_tables(frame: pd.DataFrame) -> str:
    pivot = frame.pivot_table(index=["model", "num_ranks", "fabric"], columns="algorithm", values="time_s",
                              sort=False) * 1e3
    return "Fig. 12, JCT of one iteration's collectives (ms):\n" + pivot.round(3).to_string()


def fig12_figures(frame: pd.DataFrame, directory: Path) -> list[Path]:
    from ddlsim.core.papers import load_papers
    from ddlsim.report.charts import Panel, Quantity, bar_chart

    paper = load_papers().reference("sipac_fig12")
    frame = frame.assign(system=frame["fabric"].map(lambda label: system_of(str(label), paper, tuple(SYSTEM_NAMES))))
    panels = [Panel(frame[(frame["model"] == model) & (frame["num_ranks"] == cus)], f"{model}, p = {cus}")
              for model in dict.fromkeys(frame["model"]) for cus in sorted(frame["num_ranks"].unique())]
    return bar_chart(panels, "system", Quantity("time_s", "JCT", "time_s"), "algorithm", directory, "fig12",
                     category_label="topology", legend_title="all-reduce (direct = mesh)",
                     category_name=lambda system: SYSTEM_NAMES.get(str(system), str(system)),
                     title="SiPAC Fig. 12 reproduced: one iteration's collectives at 2,048 Gb/s per CU")


@define_reference("sipac_fig12", expects={"model": (), "algorithm": (), "num_ranks": (), "time_s": ()},
                  figures=fig12_figures, tables=fig12_tables)
def sipac_fig12(frame: pd.DataFrame, paper: PaperReference) -> list[Comparison]:
    jct = _jct(frame, paper)
    if "hierarchical" not in jct.columns:
        return []
    value = paper.value
    systems = list(dict.fromkeys(jct.index.get_level_values("system")))
    worst = [system for system in systems
             if (jct.xs(system, level="system").idxmax(axis=1) == "hierarchical").all()]
    comparisons = [stated(value("h_ring_worst"), f"{len(worst)} of {len(systems)} ({', '.join(worst) or 'none'})")]
    if "sipco" in jct.columns and "direct" in jct.columns:
        for system in ("bcube", "sipac"):
            if system in systems:
                part = jct.xs(system, level="system")
                comparisons.append(stated(value("sipco_beats_mesh"), span(part["direct"] / part["sipco"]),
                                          f"{system}: mesh JCT / SiPCO JCT (every model and p)"))
        if {"bcube", "sipac"} <= set(systems):
            ratio = jct.xs("bcube", level="system")["sipco"] / jct.xs("sipac", level="system")["sipco"]
            comparisons.append(stated(value("sipac_beats_bcube"), span(ratio)))
    scales = sorted(jct.index.get_level_values("num_ranks").unique())
    if len(scales) >= 2:
        low, high = scales[0], scales[-1]
        for algorithm in ("hierarchical", "sipco"):
            if algorithm in jct.columns:
                growth = (jct[algorithm].xs(high, level="num_ranks") / jct[algorithm].xs(low, level="num_ranks"))
                comparisons.append(stated(value("growth"), span(growth),
                                          f"{algorithm}: JCT at p = {high} / p = {low} (every model and topology)"))
    best = jct.min(axis=1).unstack("system")
    if "sipac" in best.columns:
        for system in (name for name in systems if name != "sipac"):
            comparisons.append(ours_only(f"{system} best JCT / SiPAC best JCT (every model and p)",
                                         span(best[system] / best["sipac"])))
    return comparisons
