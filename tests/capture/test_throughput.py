"""Throughput columns of a captured step: its batch (declared or inferred), tokens/s and MFU."""

from __future__ import annotations

import math
from functools import partial

import pytest
import torch

import ddlsim
from ddlsim.core.registry import build
from ddlsim.core.types import Precision
from examples.llama_fsdp_tp import SHAPES
from examples.llama_fsdp_tp import build as llama

DP, TP, BATCH = 2, 2, 2


@pytest.fixture(scope="module")
def program():
    return ddlsim.capture(partial(llama, batch=BATCH), (DP, TP), ("dp", "tp"))


def test_the_batch_comes_from_the_token_inputs(program):
    """Every rank embeds (BATCH, seq) token ids; the tp ranks share them, the dp ranks do not."""
    row = ddlsim.simulate(program, device="h100_sxm").row()
    seq = SHAPES["tiny"]["seq_len"]
    assert (row["global_batch"], row["seq_len"], row["batch_source"]) == (BATCH * DP, seq, "inferred")
    assert row["tokens_per_step"] == BATCH * DP * seq
    assert row["samples_per_s"] == pytest.approx(BATCH * DP / row["iteration_time_s"])
    assert row["tokens_per_s"] == pytest.approx(BATCH * DP * seq / row["iteration_time_s"])


def test_mfu_is_model_flops_per_second_over_the_peak_of_every_gpu(program):
    row = ddlsim.simulate(program, device="h100_sxm").row()
    events = program.events
    model = events.flop[events.phase.isin(["forward", "backward"])].sum() * DP * TP  # one captured rank for all
    assert row["model_flop_per_step"] == model
    peak = build("device", "h100_sxm").peak(Precision.BF16)
    assert row["mfu"] == pytest.approx(model / row["iteration_time_s"] / (peak * DP * TP))
    assert 0 < row["mfu"] < 1


def test_a_declared_batch_wins(program, tmp_path):
    declared = ddlsim.capture(partial(llama, batch=BATCH), (DP, TP), ("dp", "tp"), global_batch=64, seq_len=4096)
    row = ddlsim.simulate(declared, device="h100_sxm").row()
    assert (row["global_batch"], row["seq_len"], row["batch_source"]) == (64, 4096, "declared")
    saved = ddlsim.CapturedProgram.load(declared.save(tmp_path / "declared.parquet"))
    assert ddlsim.simulate(saved, device="h100_sxm").row()["global_batch"] == 64


def _declaring(mesh):
    ddlsim.capture.batch(global_batch=48, seq_len=16)
    weight = torch.nn.Parameter(torch.ones(8, 8))

    def step():
        (torch.ones(4, 8) @ weight).sum().backward()

    return step


def test_the_build_function_may_declare_it_and_without_tokens_it_is_unknown():
    row = ddlsim.simulate(ddlsim.capture(_declaring, (2,), ("dp",)), device="h100_sxm").row()
    assert (row["global_batch"], row["seq_len"], row["tokens_per_step"]) == (48, 16, 48 * 16)
    unknown = ddlsim.simulate(ddlsim.capture(_declaring, (2,), ("dp",), global_batch=0), device="h100_sxm")
    assert unknown.row()["global_batch"] == 48  # 0 leaves it to the program
    ddlsim.capture.batch(1, 1)  # outside a capture: nothing happens

    def anonymous(mesh):
        weight = torch.nn.Parameter(torch.ones(8, 8))
        return lambda: (torch.ones(4, 8) @ weight).sum().backward()

    row = ddlsim.simulate(ddlsim.capture(anonymous, (2,), ("dp",)), device="h100_sxm").row()
    assert row["global_batch"] == 1 and row["batch_source"] == "unknown"
    assert math.isnan(row["samples_per_s"]) and math.isnan(row["tokens_per_s"]) and row["mfu"] > 0
