"""WRHT's experiments beside the paper: Table 1 and Fig. 2 (steps), Figs. 4-6 (all-reduce time on
the WDM optical ring) and Fig. 7 (optical against electrical).

The paper gives Figs. 4-7 only as normalised bars; its text states average reductions of
communication time, which are compared here over every (model, nodes, wavelengths) point of the
sweep. Figures are normalised as the paper's are. Paper values: `configs/reference/papers.yaml`.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ddlsim.core.papers import PaperReference, load_papers
from ddlsim.report.reference import (
    COLLECTIVE_ROWS,
    STEPS_ROWS,
    Comparison,
    define_reference,
    has_role,
    ours_only,
    stated,
)
from ddlsim.report.references.ramp_collectives import labelled

if TYPE_CHECKING:
    import pandas as pd

MODELS = {"resnet50": "ResNet50", "vgg16": "VGG16", "alexnet": "AlexNet", "beit_large": "BEiT-L"}
REFERENCE_MODEL = "resnet50"


def base(algorithm: str) -> str:
    """``wrht(group_rule=lemma1)`` -> ``wrht``."""
    return str(algorithm).partition("(")[0]


def _reduction_text(reduction: pd.Series) -> str:
    return f"{reduction.mean():.2f}% (range {reduction.min():.2f} to {reduction.max():.2f}%)"


def reduction(table: pd.DataFrame, ours: pd.Series, baseline: pd.Series, keys: list[str]) -> pd.Series:
    """Percent by which the `ours` rows beat the `baseline` rows at equal `keys`: (1 - ours / baseline) x 100."""
    merged = table[ours].merge(table[baseline], on=keys, suffixes=("", "_b"))
    return (1 - merged["time_s"] / merged["time_s_b"]) * 100


# -- Table 1 and Fig. 2 ---------------------------------------------------------------------------

def table1_tables(frame: pd.DataFrame) -> str:
    table = labelled(frame)
    return "Steps per all-reduce:\n" + table.pivot_table(index=["series", "num_ranks"], columns="algorithm",
                                                          values="num_steps", sort=False).to_string()


def table1_figures(frame: pd.DataFrame, directory: Path) -> list[Path]:
    import pandas as pd

    from ddlsim.report.charts import Panel, Quantity, bar_chart

    paper = load_papers().reference("wrht_table1")
    rows = [row for row in _steps_side_by_side(frame, paper) if row[2] is not None]
    long = pd.DataFrame([{"algorithm": name, "source": source, "steps": steps}
                         for name, ours, paper_steps in rows
                         for source, steps in (("paper", paper_steps), ("ddlsim schedule", ours))])
    if long.empty:
        return []
    return bar_chart([Panel(long)], "algorithm", Quantity("steps", "communication steps"), "source", directory,
                     "table1", category_label="algorithm", annotate=True, legend_title="steps from",
                     title="WRHT Table 1 (N = 1024, w = 64) and Fig. 2 (15 nodes, w = 2)")


def _step_rows(frame: pd.DataFrame, paper: PaperReference) -> Iterator[tuple[str, Any, str]]:
    """(role, row, the paper's value key) for every row of the steps table, Table 1's then Fig. 2's."""
    table = labelled(frame)
    for role in ("table1", "fig2"):
        systems = paper.systems(role)
        part = table[table["series"].map(lambda label, systems=systems: has_role(str(label), systems))]
        for row in part.itertuples():
            yield role, row, f"{role}_{base(row.algorithm)}"


def _steps_side_by_side(frame: pd.DataFrame, paper: PaperReference) -> list[tuple[str, int, float | None]]:
    """(what, our steps, the paper's steps or None) for every row of the steps table."""
    from ddlsim.report.display import display_table

    rows = []
    for role, row, key in _step_rows(frame, paper):
        value = paper.values.get(key)
        name = display_table().algorithm(base(row.algorithm)) + ("\n(Fig. 2)" if role == "fig2" else "")
        rows.append((name, int(row.num_steps), value.value if value else None))
    return rows


@define_reference("wrht_table1", expects=STEPS_ROWS, tables=table1_tables, figures=table1_figures)
def wrht_table1(frame: pd.DataFrame, paper: PaperReference) -> list[Comparison]:
    return [stated(paper.value(key), str(row.num_steps)) if key in paper.values
            else ours_only(f"{role}: {row.algorithm} steps, {row.num_ranks} nodes", str(row.num_steps))
            for role, row, key in _step_rows(frame, paper)]


# -- Fig. 4 ---------------------------------------------------------------------------------------

def _fig4(frame: pd.DataFrame) -> pd.DataFrame:
    table = labelled(frame)
    table = table[table["algorithm"].map(base) == "wrht"]
    return table.assign(m=table["algorithm"].str.extract(r"m=(\d+)")[0].astype(int))


def fig4_figures(frame: pd.DataFrame, directory: Path) -> list[Path]:
    from ddlsim.report.charts import Panel, Quantity, bar_chart

    table = _fig4(frame).sort_values("m", kind="stable")
    largest = table.groupby("model")["time_s"].transform(lambda times: times.iloc[-1])
    index = {m: position for position, m in enumerate(sorted(table["m"].unique()))}
    table = table.assign(normalised_time=table["time_s"] / largest,
                         series=[f"WRHT_{index[m]} (m={m})" for m in table["m"]])
    return bar_chart([Panel(table)], "model", Quantity("normalised_time", "time / largest m"), "series", directory,
                     "fig4", category_label="model", legend_title="group size", category_name=MODELS.get,
                     title="WRHT Fig. 4 reproduced: 1024 nodes, w = 64")


@define_reference("wrht_fig4", expects=COLLECTIVE_ROWS, figures=fig4_figures)
def wrht_fig4(frame: pd.DataFrame, paper: PaperReference) -> list[Comparison]:
    import pandas as pd

    times = _fig4(frame).pivot_table(index="model", columns="m", values="time_s")
    if not {17, 65, 129} <= set(times.columns):
        return []
    ratio = pd.concat([times[65] / times[17], times[129] / times[17]]) * 100
    steps = _fig4(frame).groupby("m")["num_steps"].first()
    return [stated(paper.value("half_of_smallest_group"), _reduction_text(ratio)),
            ours_only("WRHT steps by m", ", ".join(f"m={m}: {s}" for m, s in steps.items()))]


# -- Figs. 5 and 6 --------------------------------------------------------------------------------

def _optical(frame: pd.DataFrame, paper: PaperReference) -> tuple[pd.DataFrame, pd.Series]:
    """Rows with `kind` (the algorithm, or ``ring_fixed_circuits`` on another ring), and the main-fabric mask."""
    table = labelled(frame)
    main = table["series"].map(lambda label: str(label) in paper.systems("ring"))
    kinds = table["algorithm"].map(base).where(main, table["algorithm"].map(base) + "_fixed_circuits")
    return table.assign(kind=kinds), main


def _figure_5_6(frame: pd.DataFrame, directory: Path, reference: str) -> list[Path]:
    from ddlsim.report.charts import Quantity, line_chart, panels_by
    from ddlsim.report.display import display_table

    paper = load_papers().reference(reference)
    table, _ = _optical(frame, paper)
    x = "fabric_wavelengths" if reference == "wrht_fig5" else "fabric_num_nodes"
    point = table[(table["kind"] == "wrht") & (table["model"] == REFERENCE_MODEL)]
    anchor = point.loc[point[x].idxmax() if reference == "wrht_fig5" else point[x].idxmin()]
    labels = display_table().algorithms
    table = table.assign(normalised_time=table["time_s"] / anchor["time_s"],
                         series=table["kind"].map(lambda kind: labels.get(kind, kind.replace("_", " ")).replace(
                             " fixed circuits", ", fixed circuits")))
    order = ["ring", "hring", "binomial_tree", "wrht", "ring_fixed_circuits"]
    table = table.assign(order=table["kind"].map(lambda kind: order.index(kind) if kind in order else 99))
    table = table.sort_values(["order", x])
    where = (f"{anchor[x]:g} wavelengths" if reference == "wrht_fig5" else f"{anchor[x]:,} nodes")
    label = "wavelengths" if reference == "wrht_fig5" else "nodes"
    return line_chart(panels_by(table, "model", MODELS.get), Quantity(x, label, "count"),
                      Quantity("normalised_time", "time / reference"), "series", directory, reference[-4:],
                      columns=2, legend_title="algorithm",
                      title=f"WRHT Fig. {reference[-1]} reproduced (ddlsim, optical ring); reference: WRHT on "
                            f"ResNet50 at {where}")


def _compare_5_6(frame: pd.DataFrame, paper: PaperReference) -> list[Comparison]:
    table, main = _optical(frame, paper)
    keys = ["model", "num_ranks", "fabric_wavelengths"]
    rows = []
    for baseline in ("ring", "hring", "binomial_tree"):
        ours = main & (table["kind"] == "wrht")
        other = main & (table["kind"] == baseline)
        if ours.any() and other.any():
            rows.append(stated(paper.value(f"vs_{baseline}"), _reduction_text(reduction(table, ours, other, keys))))
    return rows


def _tables_5_6(frame: pd.DataFrame) -> str:
    table = labelled(frame)
    time_ms = table.pivot_table(index=["model", "num_ranks", "fabric_wavelengths"], columns=["series", "algorithm"],
                                values="time_s", sort=False) * 1e3
    return "All-reduce time (ms):\n" + time_ms.round(2).to_string()


@define_reference("wrht_fig5", expects=COLLECTIVE_ROWS,
                    figures=lambda frame, directory: _figure_5_6(frame, directory, "wrht_fig5"),
                    tables=_tables_5_6)
def wrht_fig5(frame: pd.DataFrame, paper: PaperReference) -> list[Comparison]:
    return _compare_5_6(frame, paper)


@define_reference("wrht_fig6", expects=COLLECTIVE_ROWS,
                    figures=lambda frame, directory: _figure_5_6(frame, directory, "wrht_fig6"),
                    tables=_tables_5_6)
def wrht_fig6(frame: pd.DataFrame, paper: PaperReference) -> list[Comparison]:
    return _compare_5_6(frame, paper)


# -- Fig. 7 ---------------------------------------------------------------------------------------

SERIES_7 = {("electrical", "ring"): "E-Ring", ("electrical", "recursive_doubling"): "E-RD",
            ("optical", "ring"): "O-Ring", ("optical", "wrht"): "WRHT"}


def _fig7(frame: pd.DataFrame, paper: PaperReference) -> pd.DataFrame:
    table = labelled(frame)
    role = table["series"].map(lambda label: "optical" if has_role(str(label), paper.systems("optical"))
                               else "electrical" if has_role(str(label), paper.systems("electrical")) else "")
    names = [SERIES_7.get((r, base(a)), f"{a} ({s})") for r, a, s in zip(role, table["algorithm"], table["series"],
                                                                         strict=True)]
    return table.assign(system=names)


def fig7_figures(frame: pd.DataFrame, directory: Path) -> list[Path]:
    from ddlsim.report.charts import Quantity, bar_chart, panels_by

    table = _fig7(frame, load_papers().reference("wrht_fig7"))
    anchor = table[(table["system"] == "WRHT") & (table["model"] == REFERENCE_MODEL)]
    anchor = anchor.loc[anchor["num_ranks"].idxmin()]
    order = list(SERIES_7.values())
    table = table.assign(normalised_time=table["time_s"] / anchor["time_s"],
                         order=table["system"].map(lambda name: order.index(name) if name in order else 99))
    table = table.sort_values(["num_ranks", "order"])
    return bar_chart(panels_by(table, "model", MODELS.get), "num_ranks",
                     Quantity("normalised_time", "time / reference"), "system", directory, "fig7",
                     category_label="nodes", columns=2, legend_title="system",
                     title="WRHT Fig. 7 reproduced (ddlsim): optical ring vs electrical fat-tree; "
                           f"reference: WRHT on ResNet50 at {anchor['num_ranks']:,} nodes")


def fig7_tables(frame: pd.DataFrame) -> str:
    table = _fig7(frame, load_papers().reference("wrht_fig7"))
    time_ms = table.pivot_table(index=["model", "num_ranks"], columns="system", values="time_s", sort=False) * 1e3
    return "All-reduce time (ms):\n" + time_ms.round(2).to_string()


@define_reference("wrht_fig7", expects=COLLECTIVE_ROWS, figures=fig7_figures, tables=fig7_tables)
def wrht_fig7(frame: pd.DataFrame, paper: PaperReference) -> list[Comparison]:
    table = _fig7(frame, paper)
    rows = []
    for key, ours, baseline in (("oring_vs_ering", "O-Ring", "E-Ring"), ("wrht_vs_ering", "WRHT", "E-Ring"),
                                ("wrht_vs_erd", "WRHT", "E-RD")):
        mine, other = table["system"] == ours, table["system"] == baseline
        if mine.any() and other.any():
            rows.append(stated(paper.value(key), _reduction_text(reduction(table, mine, other,
                                                                           ["model", "num_ranks"]))))
    return rows
