"""`experiment=scale_costs` and its `time_split` figure: every cost of running at scale, split out.

The experiment runs for real at its largest scale (16,384 GPUs, both fabrics), where every part of
the split must be there and cost something.
"""

from __future__ import annotations

import pandas as pd
import pytest
from figure_checks import figure_problems

from ddlsim.report.make import make_report
from ddlsim.report.settings import ReportSettings
from ddlsim.report.time_split import PARTS, WALL_COLUMN, plot_time_split, time_split_table, time_split_text

LARGEST = 16384
AT_SCALE_COLUMNS = ("interference_s", "straggler_s", "framework_s")


@pytest.fixture(scope="module")
def largest_rows() -> pd.DataFrame:
    from ddlsim.app.sweep.inprocess import run_sweep

    return run_sweep(["experiment=scale_costs", f"parallel.gpus={LARGEST}"])


def test_the_experiment_runs_with_every_cost_on_at_16384_gpus(largest_rows):
    assert list(largest_rows["status"]) == ["ok", "ok"]
    assert sorted(largest_rows["fabric"]) == ["ramp", "superpod_h100"]
    assert (largest_rows["num_ranks"] == LARGEST).all()
    for column in AT_SCALE_COLUMNS:
        assert (largest_rows[column] > 0).all(), column
    assert ((largest_rows["goodput"] > 0) & (largest_rows["goodput"] < 1)).all()


def test_every_part_of_the_split_is_present_and_positive_at_16384_gpus(largest_rows):
    split = time_split_table(largest_rows)
    assert list(split["series"]) == ["superpod_h100", "ramp"]  # in the order the sweep ran them
    for column, _, _ in PARTS:
        assert (split[column] > 0).all(), column
    parts = split[[column for column, _, _ in PARTS]].sum(axis=1)
    assert parts.to_numpy() == pytest.approx(split[WALL_COLUMN].to_numpy(), rel=1e-12)
    # the failure part is what goodput leaves of the wall time
    assert (split["failure_s"] / split[WALL_COLUMN]).to_numpy() == \
        pytest.approx(1 - largest_rows["goodput"].to_numpy(), rel=1e-9)


def test_the_split_refuses_rows_it_cannot_explain(largest_rows):
    with pytest.raises(ValueError, match="straggler_s"):
        time_split_table(largest_rows.drop(columns="straggler_s"))
    unexplained = largest_rows.assign(iteration_time_s=largest_rows["iteration_time_s"] * 1.01)
    with pytest.raises(ValueError, match="add up to"):
        time_split_table(unexplained)


def test_the_figure_has_one_labelled_panel_per_fabric(largest_rows, drawn, tmp_path):
    paths = plot_time_split(largest_rows, tmp_path)
    assert sorted(path.name for path in paths) == ["time_split.pdf", "time_split.png"]
    (figure,) = drawn
    assert not figure_problems(figure, "time_split")
    assert [axis.get_title() for axis in figure.axes] == ["SuperPod fat-tree (H100)", "RAMP"]
    legend = [text.get_text() for text in figure.legends[0].get_texts()]
    assert legend == [label for _, label, _ in reversed(PARTS)]
    bars = [patch.get_height() for patch in figure.axes[0].patches]
    assert sum(bars) == pytest.approx(100.0)  # one bar: the shares of its wall time


def test_the_report_prints_the_split(largest_rows, drawn, tmp_path):
    report = make_report(largest_rows, tmp_path, ReportSettings(figures=["time_split"]),
                         write_tables=False)
    assert "where the wall time of an iteration goes on RAMP" in report.text
    assert "16,384" in report.text
    assert time_split_text(time_split_table(largest_rows)) in report.text
    assert "time_split" in {path.stem for path in report.paths}
