"""`task=collective`: the sweep over ops x algorithms x rank counts x sizes, as rows."""

from __future__ import annotations

import re

import pytest

import ddlsim
from ddlsim.core.errors import ConfigError, InfeasibleError

# One run of task=collective, whatever the default experiment of the day is.
SINGLE = ["experiment=single", "task=collective"]
COLUMNS = ["op", "fabric", "algorithm", "num_ranks", "num_groups", "size_bytes", "time_s", "latency_s", "transfer_s",
           "compute_s", "num_steps", "algbw_bps", "busbw_bps"]


def test_rows_cover_the_grid_with_unit_columns():
    result = ddlsim.run([*SINGLE, "fabric=superpod", "task.ops=[all_reduce,all_gather,barrier]", "task.sizes=[1MB,1GB]",
                         "task.num_ranks=[8,64]", "task.algorithms=[ring,rhd]"])
    assert list(result.rows[0]) == COLUMNS
    # 2 algorithms x 2 rank counts x (2 sizes for all_reduce and all_gather + 1 barrier) = 20 rows
    assert len(result.rows) == 20
    barrier = [row for row in result.rows if row["op"] == "barrier"]
    assert len(barrier) == 4 and all(row["size_bytes"] == 0 and row["busbw_bps"] == 0 for row in barrier)
    for row in result.rows:
        if row["op"] == "barrier":
            continue
        n = row["num_ranks"]
        algbw = row["size_bytes"] * 8 / row["time_s"]
        factor = 2 * (n - 1) / n if row["op"] == "all_reduce" else (n - 1) / n
        assert row["algbw_bps"] == pytest.approx(algbw) and row["busbw_bps"] == pytest.approx(algbw * factor)
    assert re.search(r"busbw \([kMGT]?b/s\)", result.summary.splitlines()[0])  # the column's one unit


def test_unsupported_points_are_skipped_and_listed():
    result = ddlsim.run([*SINGLE, "fabric=ideal", "task.ops=[all_reduce,all_to_all]", "task.sizes=[1MB]",
                         "task.num_ranks=[16]", "task.algorithms=[bruck]"])
    assert [row["op"] for row in result.rows] == ["all_to_all"]
    assert "skipped 1 point" in result.summary and "bruck cannot run all_reduce" in result.summary


def test_best_and_strided_layouts_work():
    result = ddlsim.run([*SINGLE, "fabric=superpod", "collective=best", "task.sizes=[64MB]", "task.num_ranks=[8]",
                         "task.stride=8"])
    (row,) = result.rows
    assert row["algorithm"] != "best" and row["num_groups"] == 8


def test_a_sweep_that_prices_nothing_is_an_error():
    with pytest.raises(InfeasibleError, match="no point"):
        ddlsim.run([*SINGLE, "fabric=ideal", "task.ops=[all_reduce]", "task.sizes=[1MB]", "task.num_ranks=[16]",
                    "task.algorithms=[bruck]"])


@pytest.mark.parametrize(("override", "key"), [
    ("task.ops=[allreduce]", "task.ops"),
    ("task.algorithms=[nope]", "task.algorithms"),
    ("task.num_ranks=[0]", "task.num_ranks"),
    ("task.precision=fp12", "task.precision"),
])
def test_bad_task_settings_name_the_key(override, key):
    with pytest.raises(ConfigError, match=key.replace(".", r"\.")):
        ddlsim.build_components([*SINGLE, override])
