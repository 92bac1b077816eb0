"""Every experiment's figures, and every chart kind, drawn small and checked for labels and layout.

The rows are synthetic (made-up, easy numbers shaped like each experiment's results: its
fabrics, swept values, ops, sizes and scales), so the test checks drawing, not simulation.
"""

from __future__ import annotations

import re
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
import yaml
from figure_checks import figure_problems

import ddlsim
from ddlsim import units
from ddlsim.report import style
from ddlsim.report.charts import Guide, Panel, Quantity, bar_chart, line_chart, panels_by
from ddlsim.report.display import display_table
from ddlsim.report.make import make_report
from ddlsim.report.settings import ReportSettings

EXPERIMENTS_DIR = Path(__file__).resolve().parents[2] / "configs" / "experiment"
EXPERIMENTS = sorted(path.stem for path in EXPERIMENTS_DIR.glob("*.yaml"))


@pytest.fixture
def drawn(monkeypatch) -> list[plt.Figure]:
    """Figures as they are saved, kept open for inspection; written at a small resolution."""
    figures: list[plt.Figure] = []
    close = plt.close
    monkeypatch.setattr(style, "DPI", 30)
    monkeypatch.setattr(plt, "close", figures.append)
    yield figures
    close("all")


def _sweep_values(name: str) -> dict[str, list[str]]:
    text = (EXPERIMENTS_DIR / f"{name}.yaml").read_text()
    params = ((yaml.safe_load(text) or {}).get("hydra") or {}).get("sweeper", {}).get("params") or {}
    return {key: [item.strip() for item in str(value).split(",")] for key, value in params.items()}


def _training_rows(fabrics: list[str], sweep: dict[str, list[str]]) -> list[dict]:
    if "model.target_loss" in sweep:
        points = [(float(loss), 8 * 4**index) for index, loss in enumerate(sweep["model.target_loss"])]
    elif "ramp_table10" in sweep:
        points = [(None, int(re.sub(r"\D", "", option))) for option in sweep["ramp_table10"]]
    else:
        points = [(2.5, 64)]
    rows = []
    for rank, fabric in enumerate(fabrics):
        for loss, gpus in points:
            compute_s, comm_s = 10.0, 0.5 * (rank + 1) * np.log2(gpus)
            iteration = compute_s + comm_s
            rows.append({"overrides": f"fabric={fabric}", "fabric": fabric.split("_")[0], "model_target_loss": loss,
                         "num_ranks": gpus, "iteration_time_s": iteration, "compute_time_s": compute_s,
                         "exposed_comm_time_s": comm_s, "comm_fraction": comm_s / iteration, "num_steps": 1000,
                         "time_to_accuracy_s": 1000 * iteration * gpus ** 0.3, "compute_source": "roofline",
                         "status": "ok"})
    return rows


def _collective_rows(fabrics: list[str], task) -> list[dict]:
    rows = []
    for rank, fabric in enumerate(fabrics):
        for op in task.ops:
            for size in [units.parse_size_bytes(size) for size in task.sizes]:
                for ranks in task.num_ranks:
                    latency, transfer = 1e-6 * np.log2(ranks) * (rank + 1), size / (100e9 / (rank + 1))
                    rows.append({"overrides": f"fabric={fabric}", "op": op, "fabric": fabric, "algorithm": "ring",
                                 "num_ranks": ranks, "size_bytes": size, "time_s": latency + 1.2 * transfer,
                                 "latency_s": latency, "transfer_s": transfer, "compute_s": 0.2 * transfer})
    return rows


def _hybrid_rows(fabrics: list[str], task) -> list[dict]:
    return [{"overrides": f"fabric={fabric}", "fabric": fabric, "num_ranks": ranks, "cu_bandwidth_bps": bandwidth,
             "time_s": (rank + 1) * ranks * 1e8 / bandwidth}
            for rank, fabric in enumerate(fabrics) for ranks in task.num_ranks
            for bandwidth in [units.parse_bandwidth_bps(value) for value in task.cu_bandwidths]]


def _topoopt_rows(config, sweep: dict[str, list[str]]) -> list[dict]:
    """Rows shaped like task=topoopt's (one per system) or task=topoopt_cost's (one per architecture)."""
    task = config.task
    if task.name == "topoopt_cost":
        return [{"fabric": fabric, "degree": degree, "num_servers": servers, "capex_usd": 1e4 * servers * (rank + 1),
                 "power_w": 10.0 * servers, "status": "ok"}
                for degree in (4, 8) for servers in task.num_servers
                for rank, fabric in enumerate(("topoopt", "topoopt_3d_mems", "topoopt_ideal", "expander"))]
    models = sweep.get("model", [str(config.model.label)])
    bandwidths = [units.parse_bandwidth_bps(value) for value in sweep.get("task.link_bandwidth",
                                                                          [task.link_bandwidth])]
    latencies = [units.parse_time_s(value) for value in sweep.get("task.reconfiguration", ["10ms"])]
    degrees = [int(value) for value in sweep.get("task.degree", [task.degree])]
    batches = [int(value) for value in sweep.get("model.batch_per_gpu", [64])]
    rows = []
    for model in models:
        for bandwidth in bandwidths:
            for latency in latencies:
                for degree in degrees:
                    for batch in batches:
                        for rank, system in enumerate(task.systems):
                            rows.append({"model": model, "fabric": system, "num_ranks": 512, "degree": degree,
                                         "link_bandwidth_bps": bandwidth, "batch_per_gpu": batch,
                                         "swept_reconfiguration_s": latency, "compute_time_s": 0.1,
                                         "iteration_time_s": 0.1 + (rank + 1) * batch / bandwidth * 1e7,
                                         "all_to_all_over_allreduce": batch / 1000, "bandwidth_tax": 1 + batch / 1000,
                                         "mp_bandwidth_tax": 2.0, "mean_path_length": 12 / degree,
                                         "status": "ok"})
    return rows


# Experiments whose report is tables only (no figures): RAMP Tables 3, 4, 9 and 10.
TABLE_ONLY = {"ramp_cost_tables", "ramp_tables"}


def experiment_rows(name: str) -> tuple[pd.DataFrame, ReportSettings]:
    """Synthetic rows shaped like experiment `name`'s results, and its report settings."""
    config = ddlsim.compose([f"experiment={name}"])
    sweep = _sweep_values(name)
    fabrics = sweep.get("fabric", [str(config.fabric.name)])
    task = config.task
    if task.name == "collective":
        rows = _collective_rows(fabrics, task)
    elif task.name == "hybrid":
        rows = _hybrid_rows(fabrics, task)
    elif task.name.startswith("topoopt"):
        rows = _topoopt_rows(config, sweep)
    else:
        rows = _training_rows(fabrics, sweep)
    return pd.DataFrame(rows), ReportSettings(**{key: value for key, value in config.report.items()})


@pytest.mark.parametrize("name", EXPERIMENTS)
def test_every_experiment_draws_labelled_figures(name, drawn, tmp_path):
    if str(ddlsim.compose([f"experiment={name}"]).task.name) in TABLE_ONLY:
        pytest.skip("a report of tables only (tests/tasks/test_ramp_tables_task.py checks them)")
    frame, settings = experiment_rows(name)
    report = make_report(frame, tmp_path, settings, write_tables=False)
    pngs = [path.stem for path in report.paths if path.suffix == ".png"]  # in the order they were drawn
    pdfs = [path.stem for path in report.paths if path.suffix == ".pdf"]
    assert pngs and pngs == pdfs
    assert len(drawn) == len(pngs)
    problems = [problem for figure, stem in zip(drawn, pngs, strict=True)
                for problem in figure_problems(figure, f"{name}/{stem}")]
    assert not problems, "\n".join(problems)


def test_the_training_figures_use_display_names_and_show_the_gpu_count(drawn, tmp_path):
    frame, settings = experiment_rows("ramp_megatron")
    make_report(frame, tmp_path, settings, write_tables=False)
    training_time = drawn[0]
    axis = training_time.axes[0]
    legend = [text.get_text() for text in axis.get_legend().get_texts()]
    assert "RAMP" in legend and "SuperPod fat-tree" in legend and "ramp" not in legend
    ticks = [label.get_text() for label in axis.get_xticklabels()]
    assert ticks[0].endswith("8 GPUs") and ticks[-1].endswith("2,097,152 GPUs")


def test_a_small_gap_does_not_fill_the_axis(drawn, tmp_path):
    """The default job's two fabrics differ by about 5 %: a linear axis from zero, plain ticks."""
    frame, settings = experiment_rows("quickstart")
    frame["time_to_accuracy_s"] = np.where(frame["fabric"] == "ramp", 4.0, 4.2) * 86400
    make_report(frame, tmp_path, settings, write_tables=False)
    axis = drawn[0].axes[0]
    assert axis.get_yscale() == "linear" and axis.get_ylim()[0] == 0
    assert "days" in axis.get_ylabel()
    comm_share = drawn[1].axes[0]
    assert comm_share.get_ylim()[1] < 100  # scaled to the data, not fixed at 0-100 %


def test_speedup_labels_are_horizontal_readable_and_inside(drawn, tmp_path):
    frame, settings = experiment_rows("ramp_megatron")
    make_report(frame, tmp_path, settings, write_tables=False)
    speedup = drawn[2].axes[0]
    labels = [text for text in speedup.texts if text.get_text()]
    assert labels and all(text.get_rotation() == 0 and text.get_fontsize() >= 7 for text in labels)
    assert not figure_problems(drawn[2])


def test_a_fabric_keeps_its_colour_in_every_figure():
    alone = style.series_styles(["superpod"])["superpod"]["color"]
    among = style.series_styles(["torus2d", "ramp", "superpod", "sipac"])["superpod"]["color"]
    variant = style.series_styles(["ramp", "superpod_sipac"])["superpod_sipac"]["color"]
    assert alone == among == variant
    fabric_colours = {look.color for look in display_table().fabrics.values()}
    others = style.series_styles(["ring", "mesh", "h_ring", "sipco", *(f"setting {index}" for index in range(12))])
    assert not fabric_colours & {entry["color"] for entry in others.values()}


def test_variants_of_one_fabric_in_one_figure_look_different():
    styles = style.series_styles(["topoopt_ramp", "topoopt_ramp_per_step"])
    one, other = styles.values()
    assert one["color"] == other["color"]
    assert (one["linestyle"], one["marker"]) != (other["linestyle"], other["marker"])


def test_line_chart_with_panels_variants_guides_and_points(drawn, tmp_path):
    rows = [{"op": op, "fabric": fabric, "size_bytes": size, "num_ranks": ranks,
             "time_s": factor * size / 1e11 * ranks / 64}
            for op in ("all_reduce", "all_to_all") for factor, fabric in ((1, "ramp"), (3, "superpod"))
            for size in (10**6, 10**8, 10**9) for ranks in (64, 4096)]
    frame = pd.DataFrame(rows)
    paths = line_chart(panels_by(frame, "op", style.op_name), Quantity("size_bytes", "message size", "size_bytes"),
                       Quantity("time_s", "completion time", "time_s"), "fabric", tmp_path, "lines",
                       variant="num_ranks", guides=[Guide(1e-3, "1 ms")], title="lines")
    paths += line_chart([Panel(frame, "measured")], Quantity("time_s", "measured", scale="log"),
                        Quantity("time_s", "predicted", scale="log"), "fabric", tmp_path, "points", points=True,
                        guides=[Guide(1.0, kind="ratio")])
    assert sorted(path.name for path in paths) == ["lines.pdf", "lines.png", "points.pdf", "points.png"]
    assert [axis.get_title() for axis in drawn[0].axes[:2]] == ["all-reduce", "all-to-all"]
    assert drawn[0].axes[0].get_xticklabels()[0].get_text() == "1 MB"
    assert "(ms)" in drawn[0].axes[0].get_ylabel() or "(us)" in drawn[0].axes[0].get_ylabel()
    for figure in drawn:
        assert not figure_problems(figure)


def test_bar_chart_draws_dots_on_a_log_axis_and_ratio_bars_from_one(drawn, tmp_path):
    frame = pd.DataFrame({"op": ["reduce_scatter", "all_to_all"] * 2, "system": ["RAMP"] * 2 + ["Fat-Tree"] * 2,
                          "time_s": [1e-3, 7e-3, 1e-2, 2.0]})
    bar_chart([Panel(frame)], "op", Quantity("time_s", "completion time", "time_s"), "system", tmp_path, "times",
              category_name=style.op_name)
    ratio = pd.DataFrame({"op": ["reduce_scatter", "all_to_all"], "speedup": [8.0, 283.0], "over": ["Fat-Tree"] * 2})
    bar_chart([Panel(ratio)], "op", Quantity("speedup", "speed-up (x)"), "over", tmp_path, "speedup", annotate=True,
              baseline=1.0)
    times, speedup = drawn[0].axes[0], drawn[1].axes[0]
    assert times.get_yscale() == "log" and not times.patches and times.collections  # dots, not log-scale bars
    assert speedup.get_yscale() == "log" and all(patch.get_y() == 1.0 for patch in speedup.patches)
    assert speedup.patches[0].get_facecolor() == plt.matplotlib.colors.to_rgba(
        style.series_styles(["superpod"])["superpod"]["color"])
    assert [text.get_text() for text in speedup.texts] == ["8", "283"]
    for figure in drawn:
        assert not figure_problems(figure)


def test_the_check_finds_what_the_old_figures_got_wrong():
    """A log axis over a 5 % range (exponent ticks), a legend on the data, 6 pt bar labels, no y label."""
    figure, axis = plt.subplots()
    axis.plot([0, 1], [4.1, 4.3], label="ramp")
    axis.plot([0, 1], [4.0, 4.2], label="superpod")
    axis.set_yscale("log")
    axis.set_xlabel("target loss")
    axis.legend(loc="center")
    axis.bar_label(axis.bar([0.5], [4.2]), labels=["1.05"], fontsize=6, rotation=90)
    problems = "\n".join(figure_problems(figure))
    plt.close(figure)
    for expected in ("exponent tick label", "legend over the data", "is 6.0 pt", "no y label"):
        assert expected in problems
