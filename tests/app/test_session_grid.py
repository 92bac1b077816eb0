"""`ddlsim.Session` and `ddlsim.run` give, configuration after configuration, exactly the rows of a full
composition (`ddlsim.compose` + `ddlsim.app.runner.run`), on a grid that moves between the fast
path (scalar values set on the working copy) and composition's path: data and micro-batch degrees,
a new model size, a new fabric option, collective choices, a value set twice, a rejected override
(the one-line `ConfigError` the command prints) and back (issue 34)."""

from __future__ import annotations

import pytest
from row_checks import same_rows

import ddlsim
from ddlsim.app import runner
from ddlsim.core.errors import ConfigError

BASE = ["experiment=single", "model=gpt", "model.d_model=3072", "model.heads=24", "model.layers=16",
        "model.seq_len=2048", "model.global_batch=256", "device=h100_sxm", "fabric=superpod",
        "parallel.tensor=4", "parallel.pipeline=4"]
GRID = [
    ["parallel.data=8", "parallel.micro_batch=1"],
    ["parallel.data=16", "parallel.micro_batch=2"],
    ["parallel.data=8", "parallel.micro_batch=4"],
    ["parallel.data=8", "parallel.micro_batch=1"],  # a repeat
    ["parallel.data=8", "model.d_model=4096", "model.heads=32", "model.layers=32"],  # a new model size
    ["parallel.data=8", "fabric.nic_bandwidth=400Gbps"],  # a new fabric option
    ["parallel.data=16", "collective=best"],  # a collective choice: another composition
    ["parallel.data=16", "collective=ring"],
    ["parallel.data=8", "collective=best", "fabric.nic_bandwidth=400Gbps", "model.layers=32"],
    ["parallel.data=8", "parallel.data=16"],  # set twice: the last wins
    ["parallel.data=4", "model.global_batch=512"],  # a base value overridden
    ["parallel.data=8", "parallel.micro_batch=1"],
]
REJECTED = [["parallel.data=abc"], ["parallel.data=8", "parallel.micro_batch=x"], ["parallel.data=3"],
            ["parallel.data=8", "fabric.nic_bandwidth=fast"], ["parallel.data=8", "model.heads=-1"],
            ["parallel.data=abc", "parallel.data=8"]]


def _composed(overrides):
    return runner.run(ddlsim.compose([*BASE, *overrides]))


@pytest.mark.parametrize("grid", [GRID[:6], GRID[6:]], ids=["values", "choices"])
def test_session_and_ddlsim_run_equal_a_full_composition_on_a_grid(grid):
    session = ddlsim.Session(BASE)
    for overrides in grid:
        expected = _composed(overrides).rows
        same_rows(session.run(overrides).rows, expected)
        same_rows(ddlsim.run([*BASE, *overrides]).rows, expected)


@pytest.mark.parametrize("rejected", REJECTED, ids=" ".join)
def test_a_rejected_override_raises_the_line_composition_raises_and_leaves_nothing_behind(rejected):
    session = ddlsim.Session(BASE)
    before = session.run(GRID[1]).rows
    with pytest.raises(ConfigError) as expected:
        _composed(rejected)
    with pytest.raises(ConfigError) as got:
        session.run(rejected)
    with pytest.raises(ConfigError) as shared:
        ddlsim.run([*BASE, *rejected])
    assert str(got.value) == str(shared.value) == str(expected.value)
    assert "\n" not in str(got.value)
    same_rows(session.run(GRID[1]).rows, before)
    same_rows(session.run(GRID[0]).rows, _composed(GRID[0]).rows)
