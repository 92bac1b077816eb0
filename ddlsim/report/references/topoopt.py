"""TopoOpt's Figs. 10, 11, 12-14 and 17 beside the paper.

ddlsim's numbers come from the rows of ``experiment=topoopt_fig10`` (``task=topoopt_cost``) and
``topoopt_fig11``, ``topoopt_fig12_14``, ``topoopt_fig17`` (``task=topoopt``); the paper's from
`configs/reference/papers.yaml`, whose roles say which rows play the paper's systems.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ddlsim.core.papers import PaperReference
from ddlsim.report.reference import TOPOOPT_ROWS, Comparison, define_reference, span, stated

if TYPE_CHECKING:
    import pandas as pd

GIGA = 1e9


def _system(paper: PaperReference, role: str) -> str:
    return paper.systems(role)[0]


def _pivot(frame: pd.DataFrame, index: list[str], values: str) -> pd.DataFrame:
    return frame.pivot_table(index=index, columns="fabric", values=values)


def _ratio(table: pd.DataFrame, top: str, bottom: str) -> pd.Series:
    import pandas as pd

    if top not in table or bottom not in table:
        return pd.Series(dtype=float)
    return table[top] / table[bottom]


def _mean(series: pd.Series) -> str:
    return span(series.mean()) if len(series.dropna()) else "n/a"


def _model_of(frame: pd.DataFrame) -> pd.Series:
    return frame["model"].str.replace("topoopt_", "", regex=False)


def _topology_rows(frame: pd.DataFrame) -> pd.DataFrame:
    """The rows of the system on TopologyFinder's topology: those with a bandwidth tax."""
    return frame[frame["bandwidth_tax"].notna()] if "bandwidth_tax" in frame else frame.iloc[0:0]


# -- Fig. 10 -------------------------------------------------------------------------------------

@define_reference("topoopt_fig10", expects={"capex_usd": (), "link_bandwidth_bps": ()},
                    figures=lambda frame, directory: fig10_figures(frame, directory),
                    tables=lambda frame: fig10_table(frame))
def topoopt_fig10(frame: pd.DataFrame, paper: PaperReference) -> list[Comparison]:
    table = _pivot(frame, ["degree", "num_servers"], "capex_usd")
    topoopt = _system(paper, "topoopt")
    ocs = _ratio(table, _system(paper, "topoopt_ocs"), topoopt)
    ideal = _ratio(table, _system(paper, "ideal_switch"), topoopt)
    largest = ideal[ideal.index.get_level_values("num_servers") == 4394] if len(ideal) else ideal
    value = paper.value
    return [stated(value("ocs_over_patch_panel"), _mean(ocs)),
            stated(value("ideal_over_topoopt"), _mean(ideal)),
            stated(value("ideal_over_topoopt_4394"), span(largest, suffix="x") + " (d = 4 and 8)")]


def fig10_table(frame: pd.DataFrame) -> str:
    table = _pivot(frame, ["degree", "num_servers"], "capex_usd") / 1e6
    return "Fig. 10: interconnect cost (million USD), B = 100 Gb/s\n" + table.round(2).to_string()


def fig10_figures(frame: pd.DataFrame, directory: Path) -> list[Path]:
    from ddlsim.report.charts import Quantity, line_chart, panels_by

    frame = frame.assign(capex_musd=frame["capex_usd"] / 1e6)
    return line_chart(panels_by(frame, "degree", lambda degree: f"d = {degree}, B = 100 Gb/s"),
                      Quantity("num_servers", "servers", "count"), Quantity("capex_musd", "network cost (million USD)"),
                      "fabric", directory, "fig10", legend_title="architecture",
                      title="TopoOpt Fig. 10 reproduced (ddlsim): interconnect cost")


# -- Fig. 11 -------------------------------------------------------------------------------------

@define_reference("topoopt_fig11", expects=TOPOOPT_ROWS,
                    figures=lambda frame, directory: fig11_figures(frame, directory),
                    tables=lambda frame: fig11_table(frame), summary=False)
def topoopt_fig11(frame: pd.DataFrame, paper: PaperReference) -> list[Comparison]:
    frame = frame.assign(short=_model_of(frame))
    table = _pivot(frame, ["short", "link_bandwidth_bps"], "iteration_time_s")
    topoopt, fat, ideal = (_system(paper, role) for role in ("topoopt", "fat_tree", "ideal_switch"))
    rows = []
    for key in paper.values:
        kind, model = key.rsplit("_", 1)
        if model not in table.index.get_level_values("short"):
            continue
        part = table.loc[model]
        ratio = _ratio(part, fat, topoopt) if kind == "fat_tree_over_topoopt" else _ratio(part, topoopt, ideal)
        rows.append(stated(paper.value(key), _mean(ratio)))
    return rows


def fig11_table(frame: pd.DataFrame) -> str:
    table = _pivot(frame.assign(link_gbps=frame["link_bandwidth_bps"] / GIGA), ["model", "link_gbps"],
                   "iteration_time_s") * 1e3
    return "Fig. 11: iteration time (ms), 128 servers x 4 GPUs, d = 4\n" + table.round(1).to_string()


def fig11_figures(frame: pd.DataFrame, directory: Path) -> list[Path]:
    from ddlsim.report.charts import Quantity, line_chart, panels_by

    return line_chart(panels_by(frame, "model"), Quantity("link_bandwidth_bps", "link bandwidth B", "bandwidth_bps"),
                      Quantity("iteration_time_s", "iteration time", "time_s"), "fabric", directory, "fig11",
                      legend_title="interconnect", title="TopoOpt Fig. 11 reproduced (ddlsim): 128 servers, d = 4")


# -- Figs. 12-14 ---------------------------------------------------------------------------------

@define_reference("topoopt_fig12_14", expects=TOPOOPT_ROWS,
                    figures=lambda frame, directory: fig12_14_figures(frame, directory),
                    tables=lambda frame: fig12_14_table(frame), summary=False)
def topoopt_fig12_14(frame: pd.DataFrame, paper: PaperReference) -> list[Comparison]:
    table = _pivot(frame, ["degree", "batch_per_gpu"], "iteration_time_s")
    topoopt, fat = _system(paper, "topoopt"), _system(paper, "fat_tree")
    own = frame[frame["fabric"] == topoopt].set_index(["degree", "batch_per_gpu"])
    value = paper.value

    def at(series: pd.Series, degree: int, batch: int, suffix: str = "") -> str:
        return span(series.get((degree, batch)), suffix=suffix) if (degree, batch) in series.index else "n/a"

    def lengths(degree: int) -> str:
        chosen = own[own.index.get_level_values("degree") == degree]["mean_path_length"]
        return span(chosen, suffix="") if len(chosen) else "n/a"

    ratio = own["all_to_all_over_allreduce"]
    return [
        stated(value("fat_tree_over_topoopt_b128"), at(_ratio(table, fat, topoopt), 4, 128, "x")),
        stated(value("topoopt_over_fat_tree_b2048"), at(_ratio(table, topoopt, fat), 4, 2048, "x")),
        stated(value("all_to_all_over_allreduce_b2048"), at(ratio, 4, 2048)),
        stated(value("tax_d4_b64"), at(own["bandwidth_tax"], 4, 64)),
        stated(value("tax_d8_b64"), at(own["bandwidth_tax"], 8, 64)),
        stated(value("tax_d4_b2048"), at(own["bandwidth_tax"], 4, 2048)),
        stated(value("path_length_d4"), lengths(4)),
        stated(value("path_length_d8"), lengths(8)),
    ]


def fig12_14_table(frame: pd.DataFrame) -> str:
    table = _pivot(frame, ["degree", "batch_per_gpu"], "iteration_time_s") * 1e3
    own = _topology_rows(frame)[["degree", "batch_per_gpu", "all_to_all_over_allreduce",
                                                "bandwidth_tax", "mp_bandwidth_tax", "mean_path_length"]]
    return ("Fig. 12: DLRM, 128 tables, B = 100 Gb/s, iteration time (ms)\n" + table.round(1).to_string()
            + "\n\nFigs. 13-14 (TopoOpt):\n" + own.round(3).to_string(index=False))


def fig12_14_figures(frame: pd.DataFrame, directory: Path) -> list[Path]:
    from ddlsim.report.charts import Panel, Quantity, line_chart, panels_by

    batch = Quantity("batch_per_gpu", "batch per GPU", "count")
    paths = line_chart(panels_by(frame, "degree", lambda degree: f"d = {degree}, B = 100 Gb/s"), batch,
                       Quantity("iteration_time_s", "iteration time", "time_s"), "fabric", directory, "fig12",
                       legend_title="interconnect",
                       title="TopoOpt Fig. 12 reproduced (ddlsim): DLRM, 128 tables on 128 servers")
    own = _topology_rows(frame)
    own = own.assign(d=own["degree"].map(lambda degree: f"d = {degree}"))
    chart = [Panel(own, "Fig. 13: bandwidth tax", y=Quantity("bandwidth_tax", "bandwidth tax")),
             Panel(own, "Fig. 14: path length", y=Quantity("mean_path_length", "mean path length (hops)"))]
    return paths + line_chart(chart, batch, chart[0].y, "d", directory, "fig13_14", columns=2, legend_title="degree")


# -- Fig. 17 -------------------------------------------------------------------------------------

@define_reference("topoopt_fig17", expects={**TOPOOPT_ROWS, "swept_reconfiguration_s": ()},
                    figures=lambda frame, directory: fig17_figures(frame, directory),
                    tables=lambda frame: fig17_table(frame), summary=False)
def topoopt_fig17(frame: pd.DataFrame, paper: PaperReference) -> list[Comparison]:
    frame = frame.assign(short=_model_of(frame))
    table = _pivot(frame, ["short", "swept_reconfiguration_s"], "iteration_time_s")
    topoopt, fw, nofw = (_system(paper, role) for role in ("topoopt", "fw", "nofw"))
    fw_over_nofw, nofw_over_topoopt = _ratio(table, fw, nofw), _ratio(table, nofw, topoopt)

    def at(series: pd.Series, model: str, latency_s: float) -> str:
        key = (model, latency_s)
        return span(series.get(key)) if key in series.index else "n/a"

    fastest = [at(nofw_over_topoopt, model, 1e-6) for model in ("dlrm", "bert")]
    return [stated(paper.value("bert_fw_over_nofw_10ms"), at(fw_over_nofw, "bert", 1e-2)),
            stated(paper.value("dlrm_fw_better_10ms"), at(fw_over_nofw, "dlrm", 1e-2)),
            stated(paper.value("nofw_matches_topoopt_1us"), f"DLRM {fastest[0]}, BERT {fastest[1]}")]


def fig17_table(frame: pd.DataFrame) -> str:
    table = _pivot(frame, ["model", "swept_reconfiguration_s"], "iteration_time_s") * 1e3
    return "Fig. 17: iteration time (ms), d = 8, B = 100 Gb/s\n" + table.round(1).to_string()


def fig17_figures(frame: pd.DataFrame, directory: Path) -> list[Path]:
    from ddlsim.report.charts import Quantity, line_chart, panels_by

    return line_chart(panels_by(frame, "model", lambda model: f"{model}, d = 8, B = 100 Gb/s"),
                      Quantity("swept_reconfiguration_s", "reconfiguration latency", "time_s"),
                      Quantity("iteration_time_s", "iteration time", "time_s"), "fabric", directory, "fig17",
                      legend_title="interconnect", title="TopoOpt Fig. 17 reproduced (ddlsim)")
