"""`ddlsim.capture(..., replicate=True)`: repeated pipeline chunks are replayed, not run, and the
step they describe is exactly the one a full capture records (same records, same dependencies,
same iteration time), for GPipe, 1F1B, interleaved 1F1B and the Megatron-style GPT."""

from __future__ import annotations

import pytest
import torch
from torch import nn

import ddlsim
from ddlsim.capture import CAPTURES
from ddlsim.capture.compare import captured_calls
from ddlsim.capture.program import CapturedProgram
from ddlsim.capture.records import VALUE_FIELDS
from ddlsim.core.errors import ConfigError, InfeasibleError
from examples.megatron_gpt import make_build
from tests.capture.programs import WIDTH, pipeline

UNCOMPARABLE = [*VALUE_FIELDS, "live_bytes"]


def _both(build, mesh_shape, names):
    return (ddlsim.capture(build, mesh_shape, names), ddlsim.capture(build, mesh_shape, names, replicate=True))


def _assert_same_step(full: CapturedProgram, replicated: CapturedProgram, fabric: str = "superpod") -> None:
    assert len(replicated.replays) > 0 and len(replicated.events) < len(full.events)
    assert replicated.num_records == full.num_records == len(full.events)
    # indices and dependencies included; value identity and live bytes are not comparable (replayed
    # chunks create no tensors: docs/capture.md)
    written_out = replicated.full_events().reset_index(drop=True).drop(columns=UNCOMPARABLE)
    assert written_out.equals(full.events.reset_index(drop=True).drop(columns=UNCOMPARABLE))
    for rank in full.ranks:
        assert captured_calls(replicated, rank) == captured_calls(full, rank)
        assert replicated.collective_summary(rank=rank).equals(full.collective_summary(rank=rank))
    assert replicated.total_bytes("send_recv") == full.total_bytes("send_recv")
    assert replicated.collectives.equals(full.collectives) and replicated.compute.equals(full.compute)
    eager = {"fusion": False}
    one, other = (ddlsim.simulate(program, fabric=fabric, compute=eager) for program in (full, replicated))
    assert other.iteration_time_s == one.iteration_time_s
    assert other.iteration == one.iteration
    assert len(other.graph) == len(one.graph)
    assert other.row()["global_batch"] == one.row()["global_batch"]
    assert other.row()["mfu"] == pytest.approx(one.row()["mfu"], rel=1e-12)
    # Fused pricing (the default) sees value identity only in the chunks that ran: a replay reuses
    # its template's fused kernels (docs/capture.md, "Replicated captures"). Measured 0.0 to 3.6 % apart.
    fused_one, fused_other = (ddlsim.simulate(program, fabric=fabric).iteration_time_s
                              for program in (full, replicated))
    assert fused_other == pytest.approx(fused_one, rel=0.05)


@pytest.mark.parametrize("kind", ["gpipe", "1f1b", "interleaved"])
def test_replicated_schedules_describe_the_full_step(kind):
    full, replicated = _both(pipeline(kind, micro_batches=8), (2,), ("pp",))
    _assert_same_step(full, replicated)


@pytest.mark.parametrize("pp, tp", [(1, 2), (4, 2)])
def test_replicated_gpt_gives_the_full_graph(pp, tp):
    """One stage (gradient accumulation) and four stages (scatter-gather between stages, the tied
    embedding's all-reduce between the first and the last) of the vTrain GPT program."""
    build = make_build(d_model=256, heads=8, layers=8, seq_len=128, micro_batch=2, global_batch=24)
    full, replicated = _both(build, (pp, 1, tp), ("pp", "dp", "tp"))
    _assert_same_step(full, replicated, fabric="vtrain_a100")


def test_replays_survive_save_and_load(tmp_path):
    program = ddlsim.capture(pipeline("1f1b", micro_batches=8), (2,), ("pp",), replicate=True)
    loaded = CapturedProgram.load(program.save(tmp_path / "replicated.parquet"))
    assert loaded.replays.equals(program.replays) and loaded.options["replicate"] is True
    assert ddlsim.simulate(loaded, fabric="superpod").iteration == ddlsim.simulate(program, fabric="superpod").iteration


class _Alternating(torch.autograd.Function):
    """Identity whose backward launches a different kernel on every other call."""

    calls = 0

    @staticmethod
    def forward(ctx, x):
        return x.clone()

    @staticmethod
    def backward(ctx, grad):
        _Alternating.calls += 1
        return grad * 2 if _Alternating.calls % 2 else grad.neg()


class _AlternatingBackward(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(WIDTH, WIDTH)

    def forward(self, x):
        return _Alternating.apply(self.linear(x))


class _AlternatingForward(nn.Module):
    """A forward that adds on one micro-batch and subtracts on the next (the same backward)."""

    def __init__(self):
        super().__init__()
        self.linear, self.calls = nn.Linear(WIDTH, WIDTH), 0

    def forward(self, x):
        self.calls += 1
        y = self.linear(x)
        return y + 1.0 if self.calls % 2 else y - 1.0


def test_a_backward_that_never_repeats_is_refused():
    with pytest.raises(InfeasibleError, match="capture this program without replicate"):
        ddlsim.capture(pipeline("1f1b", micro_batches=8, stage_module=_AlternatingBackward), (2,), ("pp",),
                       replicate=True)


def test_forwards_that_never_repeat_run_for_real():
    full, replicated = _both(pipeline("1f1b", micro_batches=8, stage_module=_AlternatingForward), (2,), ("pp",))
    replayed = replicated.events[replicated.multiplicity() > 1]
    assert "backward" in set(replayed.phase)
    assert "aten.addmm" not in set(replayed.op)  # the Linear's forward: every forward ran for real
    _assert_same_step(full, replicated)


def test_replicate_must_be_a_boolean():
    with pytest.raises(ConfigError, match="replicate"):
        ddlsim.capture(pipeline("1f1b"), (2,), ("pp",), replicate="yes")


def test_replicate_is_an_option_of_model_program():
    CAPTURES.clear()
    gpt = ["model=program", "model.entry=examples.megatron_gpt:build", "model.mesh_shape=[2,1,2]",
           "model.mesh_dim_names=[pp,dp,tp]", "+model.options.d_model=256", "+model.options.heads=8",
           "+model.options.layers=4", "+model.options.seq_len=128", "+model.options.global_batch=8",
           "fabric=vtrain_a100", "compute.fusion=false"]  # exact under eager pricing (see _assert_same_step)
    try:
        full = ddlsim.run(gpt).rows[0]
        replicated = ddlsim.run([*gpt, "model.replicate=true"]).rows[0]
        assert CAPTURES.misses == 2  # replicate is part of what identifies a capture
    finally:
        CAPTURES.clear()
    assert replicated["status"] == full["status"] == "ok"
    assert replicated["iteration_time_s"] == full["iteration_time_s"]


@pytest.mark.slow
def test_a_measured_sixteen_stage_row_is_captured_and_matches_the_analytic_model():
    """Multi-node row 49 of ground_truth_multi.csv: GPT 39.1 B, TP 4 x DP 8 x PP 16, 96 micro-batches
    (349 thousand records in the step; about 22 thousand run)."""
    from types import SimpleNamespace

    from ddlsim.capture.compare import analytic_calls, call_table
    from ddlsim.capture.simulation import simulate_program
    from ddlsim.network.api import make_fabric
    from ddlsim.validation import vtrain as analytic

    row = SimpleNamespace(d_model=8192, heads=64, layers=48, seq_len=2048, micro_batch=2, global_batch=1536, tp=4,
                          dp=8, pp=16, gpus=512)
    setup = analytic.build_setup()
    program = ddlsim.capture(make_build(d_model=row.d_model, heads=row.heads, layers=row.layers, seq_len=row.seq_len,
                                        micro_batch=row.micro_batch, global_batch=row.global_batch),
                             (row.pp, row.dp, row.tp), ("pp", "dp", "tp"), replicate=True)
    assert program.num_records > 10 * len(program.events)
    reference = analytic.simulate_row(row, setup)
    for stage, rank in zip(program.stages, program.ranks, strict=True):
        table = call_table(analytic_calls(reference.workload, stage), captured_calls(program, rank))
        assert table.match.all(), f"stage {stage}:\n{table[~table.match]}"
    result = simulate_program(program, make_fabric(analytic.FABRIC), analytic.ALGORITHM, setup.device, setup.compute)
    assert abs(result.iteration_time_s / reference.iteration.iteration_time_s - 1) <= 0.03
