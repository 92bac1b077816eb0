"""ddlsim's own GPT written as a Megatron-style program (examples/megatron_gpt) against the
analytic `model=gpt`: the same collective calls, counts and bytes, on every pipeline stage, and
the same iteration time within 3 %, priced as scripts/validate_vtrain.py prices the A100 runs.

Small shapes run by default; one measured multi-node vTrain configuration runs with ``-m slow``
(scripts/validate_vtrain_capture.py runs all of them).
"""

from __future__ import annotations

import pytest

import ddlsim
from ddlsim.capture.compare import analytic_calls, call_table, captured_calls
from ddlsim.capture.simulation import simulate_program
from ddlsim.network.api import make_fabric
from ddlsim.validation import vtrain as analytic
from examples.megatron_gpt import make_build


@pytest.fixture(scope="module")
def setup():
    return analytic.build_setup()


def _row(d_model, heads, layers, seq_len, micro_batch, global_batch, tp, dp, pp):
    from types import SimpleNamespace

    return SimpleNamespace(d_model=d_model, heads=heads, layers=layers, seq_len=seq_len, micro_batch=micro_batch,
                           global_batch=global_batch, tp=tp, dp=dp, pp=pp, gpus=tp * dp * pp)


def _compare(row, setup):
    program = ddlsim.capture(make_build(d_model=row.d_model, heads=row.heads, layers=row.layers, seq_len=row.seq_len,
                                        micro_batch=row.micro_batch, global_batch=row.global_batch),
                             (row.pp, row.dp, row.tp), ("pp", "dp", "tp"))
    reference = analytic.simulate_row(row, setup)
    for stage, rank in zip(program.stages, program.ranks, strict=True):
        table = call_table(analytic_calls(reference.workload, stage), captured_calls(program, rank))
        assert table.match.all(), f"stage {stage}:\n{table[~table.match]}"
    result = simulate_program(program, make_fabric(analytic.FABRIC), analytic.ALGORITHM, setup.device, setup.compute)
    return result.iteration.iteration_time_s / reference.iteration.iteration_time_s - 1


@pytest.mark.parametrize("pp", [1, 2])
def test_small_gpt_matches_the_analytic_model(setup, pp):
    difference = _compare(_row(2048, 16, 4, 1024, 8, 16 * pp, tp=2, dp=2, pp=pp), setup)
    assert abs(difference) <= 0.03


def test_four_stages_issue_the_analytic_calls(setup):
    """Middle stages hold no embedding; the tied embedding's all-reduce joins the first and last
    stage only; every stage boundary sends 1/t of the activation and all-gathers it."""
    _compare(_row(256, 8, 8, 128, 2, 16, tp=2, dp=2, pp=4), setup)


@pytest.mark.slow
def test_measured_vtrain_row_matches_the_analytic_model(setup):
    """Multi-node row 4 of ground_truth_multi.csv: GPT 3.6 B, TP 2 x DP 32, micro-batch 16, 64 A100s."""
    difference = _compare(_row(3072, 32, 30, 2048, 16, 512, tp=2, dp=32, pp=1), setup)
    assert abs(difference) <= 0.03
