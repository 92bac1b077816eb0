"""Every experiment's figures, and every chart kind, drawn small and checked for labels and layout.

Training and hybrid experiments get synthetic rows (made-up, easy numbers shaped like each
experiment's results: its fabrics, swept values and scales), because their real runs take
minutes; the test checks drawing, not simulation. Every other experiment (collective prices,
steps, closed forms, traffic patterns, packets) is run for real through the in-process sweep,
narrowed where a full run would be slow, so its figures are drawn from the columns it writes.
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
from ddlsim.core import units
from ddlsim.report import style
from ddlsim.report.charts import Guide, Panel, Quantity, bar_chart, line_chart, panels_by
from ddlsim.report.display import display_table
from ddlsim.report.make import make_report
from ddlsim.report.settings import ReportSettings

EXPERIMENTS_DIR = Path(__file__).resolve().parents[2] / "configs" / "experiment"
EXPERIMENTS = sorted(path.stem for path in EXPERIMENTS_DIR.glob("*.yaml"))


def _sweep_values(name: str) -> dict[str, list[str]]:
    """The sweep of experiment `name`, following an alias (an experiment whose defaults name another)."""
    document = yaml.safe_load((EXPERIMENTS_DIR / f"{name}.yaml").read_text()) or {}
    params = (document.get("hydra") or {}).get("sweeper", {}).get("params") or {}
    aliases = [entry for entry in document.get("defaults") or [] if isinstance(entry, str) and entry != "_self_"]
    if not params and aliases:
        return _sweep_values(aliases[0])
    return {key: [item.strip() for item in str(value).split(",")] for key, value in params.items()}


def _training_rows(fabrics: list[str], sweep: dict[str, list[str]], model: str) -> list[dict]:
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
                         "status": "ok", "model": model,
                         # what Megatron encoder and DLRM rows carry (the references check them)
                         **({"num_tables": 8} if model == "dlrm" else {"shape_source": "scaling_laws"})})
    return rows


def _hybrid_rows(fabrics: list[str], task) -> list[dict]:
    return [{"overrides": f"fabric={fabric}", "fabric": fabric, "num_ranks": ranks, "cu_bandwidth_bps": bandwidth,
             "time_s": (rank + 1) * ranks * 1e8 / bandwidth}
            for rank, fabric in enumerate(fabrics) for ranks in task.num_ranks
            for bandwidth in [units.parse_bandwidth_bps(value) for value in task.cu_bandwidths]]


SYNTHETIC_TASKS = {"train", "hybrid", "search"}
NARROWED = {  # a smaller sweep of the same shape where the full experiment takes more than a few seconds
    "opsquare_fig2_3": ["task.num_nodes=256", "task.locality=0.0,1.0", "task.load=0.3,0.9", "task.warmup=5us",
                        "task.measure=5us"],
    "ramp_fig18": ["task.num_ranks=[1024]"],
    "ramp_fig18_20": ["task.num_ranks=[1024]", "task.sizes=[1MB,1GB]"],
    "ramp_fig19": ["task.num_ranks=[1024]", "task.node_bandwidths=[0.2Tbps,12.8Tbps]"],
    "ramp_collectives": ["task.num_ranks=[1024]", "task.sizes=[1MB,1GB]"],
    "wrht_fig4": ["task.gradients_of=[resnet50,vgg16]"],
    "topoopt_fig11": ["model=topoopt_resnet50,topoopt_bert", "task.link_bandwidth=25Gbps,100Gbps",
                      "task.systems=[topoopt,topoopt_ideal,topoopt_fat_tree,sipml]"],
    "topoopt_fig12_14": ["model.batch_per_gpu=64,2048"],
    "topoopt_fig17": ["model=topoopt_bert", "task.reconfiguration=1us,10ms"],
    "topoopt_fig16": ["task.num_jobs=5,10", "task.seed=0"],
    "topoopt_fig27": ["model=topoopt_resnet50,topoopt_bert", "task.link_bandwidth=25Gbps,100Gbps",
                      "task.systems=[topoopt,topoopt_ideal,topoopt_fat_tree,sipml]"],
    "scale_costs": ["parallel.gpus=4096,16384"],
    "sipac_fig12": ["task.models=[vgg16]"],
}
RUN_FOR_REAL = {"scale_costs"}  # training experiments fast enough, narrowed, to draw from their real rows
TABLES_ONLY = {"ramp_tables_3_4", "ramp_tables_9_10"}  # the paper's tables, printed side by side; no figure


def experiment_rows(name: str) -> tuple[pd.DataFrame, ReportSettings]:
    """Experiment `name`'s rows (synthetic for training and hybrid runs, else run) and its report settings."""
    config = ddlsim.compose([f"experiment={name}"])
    settings = ReportSettings(**{key: value for key, value in config.report.items()})
    task = config.task
    if task.name not in SYNTHETIC_TASKS or name in RUN_FOR_REAL:
        from ddlsim.app.sweep.inprocess import run_sweep

        return run_sweep([f"experiment={name}", *NARROWED.get(name, [])]), settings
    sweep = _sweep_values(name)
    fabrics = sweep.get("fabric", [str(config.fabric.name)])
    rows = _hybrid_rows(fabrics, task) if task.name == "hybrid" else \
        _training_rows(fabrics, sweep, str(config.model.name))
    return pd.DataFrame(rows), settings


@pytest.mark.parametrize("name", EXPERIMENTS)
def test_every_experiment_draws_labelled_figures(name, drawn, tmp_path):
    if name in TABLES_ONLY:
        pytest.skip(f"{name} reproduces tables, not figures")
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
