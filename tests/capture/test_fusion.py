"""``compute.fusion``: runs of memory-bound ops priced as one kernel of the bytes entering and leaving."""

from __future__ import annotations

from functools import partial

import pytest
import torch

import ddlsim
from ddlsim.capture.fusion import FUSED_MEMBER, FUSED_OP, fuse_events, runs_of
from ddlsim.capture.graph import layer_of
from ddlsim.capture.pricing import kernel_class_of
from ddlsim.compute.options import build_compute
from ddlsim.core.registry import build
from examples.llama_fsdp_tp import build as llama

TOKENS, HIDDEN, FLOAT = 64, 32, 4


def _rms_norm_then_gemm(mesh):
    x, weight, projection = torch.randn(TOKENS, HIDDEN), torch.ones(HIDDEN), torch.randn(HIDDEN, HIDDEN)

    def step():
        with torch.no_grad():
            normed = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * weight
            normed @ projection

    return step


def test_a_norm_becomes_one_kernel_reading_its_input_and_writing_its_output():
    program = ddlsim.capture(_rms_norm_then_gemm, (1,), ("dp",))
    eager = program.compute
    assert list(eager.op) == ["aten.pow", "aten.mean", "aten.add", "aten.rsqrt", "aten.mul", "aten.mul", "aten.mm"]
    fused = fuse_events(program.events)
    assert list(fused.op) == [FUSED_MEMBER] * 5 + [FUSED_OP, "aten.mm"]  # the members stay, at no cost
    assert (fused.read_bytes + fused.write_bytes).iloc[:5].sum() == 0
    norm = fused.iloc[5]
    assert norm.read_bytes == (TOKENS * HIDDEN + HIDDEN) * FLOAT  # x and the weight, once each
    assert norm.write_bytes == TOKENS * HIDDEN * FLOAT  # the normalised activations the GEMM reads
    assert norm.read_bytes + norm.write_bytes < (eager.read_bytes + eager.write_bytes).iloc[:6].sum()
    assert norm["index"] == eager["index"].iloc[5]


def _adam_like_update(mesh):
    param, moment, grad = torch.zeros(TOKENS, HIDDEN), torch.zeros(TOKENS, HIDDEN), torch.randn(TOKENS, HIDDEN)

    def step():
        with torch.no_grad():
            moment.mul_(0.9).add_(grad, alpha=0.1)  # the state is updated in place, then read again
            param.add_(moment, alpha=-1e-3)

    return step


def test_storages_updated_in_place_are_written_back_even_when_read_again_inside_the_run():
    """Adam's moments and weights outlive the step: the last version of each is written to memory,
    although the run reads the moment again after updating it."""
    program = ddlsim.capture(_adam_like_update, (1,), ("dp",))
    fused = fuse_events(program.events)
    assert list(fused.op[fused.op != FUSED_MEMBER]) == [FUSED_OP]
    size = TOKENS * HIDDEN * FLOAT
    assert fused.iloc[-1].read_bytes == 3 * size  # moment, gradient and weights, once each
    assert fused.iloc[-1].write_bytes == 2 * size  # the final moment and the final weights


@pytest.fixture(scope="module")
def llama_program():
    return ddlsim.capture(partial(llama, batch=1), (2, 2), ("dp", "tp"))


def test_runs_stay_inside_one_stream_phase_and_layer_and_skip_gemms(llama_program):
    events = llama_program.events
    rows = list(events[events["rank"] == 0].itertuples(index=False))
    runs = runs_of(rows)
    assert runs
    for run in runs:
        members = [rows[position] for position in run]
        assert len({(row.stream, row.phase, layer_of(row.module)) for row in members}) == 1
        assert all(row.flop == 0 and row.op.startswith("aten.") for row in members)
        assert not any(kernel_class_of(row.op, row.gemm_m).is_attention for row in members)
        assert all(len(row.deps) == 0 for row in members[1:])  # no run waits on another stream midway
    fused = fuse_events(events)
    assert fused.flop.sum() == events.flop.sum()
    assert (fused.read_bytes + fused.write_bytes).sum() < (events.read_bytes + events.write_bytes).sum()


def test_fusion_is_the_default_and_off_for_the_megatron_compute(llama_program):
    device = build("device", "h100_sxm")
    assert build_compute(None, device).fusion and not build_compute("a100_megatron", device).fusion
    fused = ddlsim.simulate(llama_program, device="h100_sxm")
    eager = ddlsim.simulate(llama_program, device="h100_sxm", compute={"fusion": False})
    assert fused.compute_time_s < eager.compute_time_s


def test_a_saved_capture_fuses_the_same(llama_program, tmp_path):
    loaded = ddlsim.CapturedProgram.load(llama_program.save(tmp_path / "llama.parquet"))
    assert fuse_events(loaded.events).equals(fuse_events(llama_program.events))
