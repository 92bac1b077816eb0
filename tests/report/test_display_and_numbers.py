"""The display table covers every fabric; numbers print with a few digits and one unit per column."""

from __future__ import annotations

import re

import pandas as pd
import pytest

from ddlsim.app.config_store import group_options
from ddlsim.core.registry import ALGORITHMS, FABRICS
from ddlsim.core.types import CollectiveOp
from ddlsim.report.display import DisplayTable, display_table
from ddlsim.report.quantities import format_duration, format_in_unit, format_number
from ddlsim.report.summary import collective_summary, training_summary
from ddlsim.report.table import quantity_table
from ddlsim.tasks.train import summarize_row


def test_every_fabric_option_has_a_label_and_a_fixed_colour():
    table = display_table()
    options = set(FABRICS.names()) | set(group_options()["fabric"])
    missing = sorted(option for option in options if option not in table.fabrics)
    assert not missing, f"configs/display.yaml has no entry for fabric option(s) {missing}"
    for option in options:
        look = table.fabrics[option]
        assert look.label and look.color.startswith("#") and look.marker


def test_every_algorithm_and_op_has_a_readable_name():
    table = display_table()
    assert {name for name in ALGORITHMS.names()} <= set(table.algorithms)
    assert {op.value for op in CollectiveOp} <= set(table.ops)
    assert table.algorithm("h_ring") == "hierarchical ring"
    assert table.op("all_reduce") == "all-reduce"
    assert table.series("superpod_sipac") == "SuperPod (SiPAC VI-A)"
    assert table.series("ramp fabric.line_rate=100Gbps") == "RAMP fabric.line_rate=100Gbps"


def test_series_labels_find_their_fabric_by_alias_or_prefix():
    table = display_table()
    assert table.fabric("Fat-Tree").key == "superpod"
    assert table.fabric("superpod_oversub").key == "superpod"  # an option the table does not list
    assert table.fabric("OCS-reconfig-FW").key == "ocs_reconfig"
    assert table.fabric("ring") is None


def test_a_variant_without_a_colour_of_its_own_needs_one_to_borrow():
    with pytest.raises(ValueError, match="no color"):
        DisplayTable.parse("fabrics:\n  lonely: {label: Lonely}\n")


@pytest.mark.parametrize(("value", "text"), [
    (0.09999999999999999, "0.1"), (287196.4, "287,200"), (1234.5, "1,234"), (2.5, "2.5"), (32768, "32,768"),
    (float("nan"), "-"), (0.0, "0"), (1.5e-05, "1.5e-05"),
])
def test_numbers_have_four_significant_digits(value, text):
    assert format_number(value) == text


def test_durations_take_a_unit_that_suits_them():
    assert format_duration(2.965 * 86400) == "2.965 days"
    assert format_duration(47.49 * 3600) == "47.49 h"
    assert format_duration(2.527e-3) == "2.527 ms"


def test_a_column_has_one_unit():
    unit, texts = format_in_unit([1.979 * 86400, 10430 * 86400, 2.8e10], "time_s")
    assert unit == "days" and texts == ["1.979", "10,430", "324,100"]
    assert format_in_unit([10**6, 10**8, 10**10], "size_bytes") == ("MB", ["1", "100", "10,000"])


def _training_rows() -> pd.DataFrame:
    rows = []
    for loss, gpus, days in ((2.5, 8, 2.9), (1.7, 32768, 1.9), (1.0, 65536, 150000.0)):
        for fabric, factor in (("ramp", 1.0), ("superpod", 1.5)):
            rows.append({"fabric": fabric, "model_target_loss": loss, "num_ranks": gpus,
                         "iteration_time_s": 3.0 * factor, "time_to_accuracy_s": days * 86400 * factor,
                         "comm_fraction": 0.1 * factor, "compute_source": "roofline", "status": "ok"})
    return pd.DataFrame(rows)


def test_the_training_summary_shows_one_unit_per_column():
    lines = training_summary(_training_rows()).splitlines()
    header = lines[0]
    assert "time to accuracy (days)" in header and "iteration (s)" in header and "comm share (%)" in header
    assert "ramp speed-up (x)" in header
    body = "\n".join(lines[1:])
    assert "h " not in body and "days" not in body and "e+" not in body
    assert "32,768" in body  # GPU counts exactly
    assert "225,000" in body  # 150,000 days x 1.5, four significant digits


def test_the_collective_summary_shows_one_unit_per_column():
    frame = pd.DataFrame({"op": "all_reduce", "fabric": "ramp", "algorithm": "ring", "num_ranks": 64,
                          "size_bytes": [10**6, 10**9], "time_s": [1.32e-5, 1.892e-3]})
    header, *body = collective_summary(frame).splitlines()
    assert "size (MB)" in header and "time (us)" in header  # the unit of the median time
    assert "13.2" in body[0] and "1,892" in body[1]


def test_the_run_summary_prints_few_digits():
    row = {"model": "megatron", "fabric": "ramp", "algorithm": "best", "device": "a100_80gb", "status": "ok",
           "num_ranks": 8, "comm_fraction": 0.000257, "iteration_time_s": 9.842, "compute_time_s": 9.84,
           "exposed_comm_time_s": 2.527e-3, "time_to_accuracy_s": 2.965 * 86400, "num_steps": 26026,
           "samples_per_s": 252.8, "compute_source": "roofline", "compute_device": "A100",
           "network_energy_j": 8567.2, "network_power_w": 870.43, "network_cost_usd": 165600.4,
           "network_cost_scope": "job"}
    text = summarize_row(row)
    assert "2.965 days (26,026 steps)" in text and "2.527 ms" in text and "165,600 USD" in text
    assert "e+" not in text


def test_the_summary_of_a_pipelined_run_adds_up_with_its_bubble():
    """Issue 21: "iteration = compute + exposed communication" left out the bubble (36.73 != 17.03 + 2.27 ms)."""
    import ddlsim

    (row,) = ddlsim.run(["experiment=single", "model=gpt", "parallel.pipeline=4"]).rows
    assert row["bubble_time_s"] > 0
    terms = row["compute_time_s"] + row["exposed_comm_time_s"] + row["bubble_time_s"]
    assert terms == pytest.approx(row["iteration_time_s"], rel=1e-12)
    line = summarize_row(row).splitlines()[1]
    numbers = [float(text) for text in re.findall(r"(\d+(?:\.\d+)?) ms", line)]
    assert "+ pipeline bubble" in line and len(numbers) == 4
    iteration, *parts = numbers
    assert sum(parts) == pytest.approx(iteration, abs=0.015)  # four significant digits each
    (flat,) = ddlsim.run(["experiment=single", "model=gpt"]).rows
    assert "bubble" not in summarize_row(flat) and flat["bubble_time_s"] == 0


def test_a_quantity_table_names_each_columns_unit_once():
    rows = [{"op": "all_reduce", "time_s": 2.4e-4, "busbw_bps": 6.5e10}, {"op": "barrier", "time_s": 0.0803,
                                                                          "busbw_bps": None}]
    header, first, second = quantity_table(rows, {"op": None, "time_s": "time_s", "busbw_bps": "bandwidth_bps"},
                                           {"time_s": "time"}).splitlines()
    assert header.split() == ["op", "time", "(ms)", "busbw_bps", "(Gb/s)"]
    assert first.split() == ["all_reduce", "0.24", "65"] and second.split() == ["barrier", "80.3", "-"]
