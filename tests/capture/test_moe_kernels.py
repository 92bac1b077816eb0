"""Grouped GEMMs of captured MoE programs: FLOPs, shapes and class; the batched_mm route's bytes."""

from __future__ import annotations

from functools import partial

import pytest
import torch

import ddlsim
from ddlsim.capture.graph import OP_KEY_COLUMNS
from ddlsim.capture.pricing import kernel_of
from ddlsim.core.work import KernelClass
from examples.hf_fsdp import build as hf_fsdp

TOKENS, K, N, GROUPS = 256, 64, 96, 4


def _grouped_program(mesh):
    tokens = torch.randn(TOKENS, K, dtype=torch.bfloat16, requires_grad=True)
    weights = torch.randn(GROUPS, K, N, dtype=torch.bfloat16, requires_grad=True)
    offsets = torch.arange(1, GROUPS + 1, dtype=torch.int32) * (TOKENS // GROUPS)

    def step():
        torch._grouped_mm(tokens, weights, offs=offsets).square().sum().backward()

    return step


def test_grouped_mm_forward_and_both_gradients():
    """Forward 2-D x 3-D, input gradient 2-D x 3-D, weight gradient 2-D x 2-D (ragged k): each
    2 x tokens x K x N FLOPs, with groups in the batch column and the tokens of a group in m."""
    program = ddlsim.capture(_grouped_program, (1,), ("dp",))
    rows = program.events[program.events.op == "aten._grouped_mm"]
    assert list(rows.phase) == ["forward", "backward", "backward"]
    assert list(rows.flop) == [2.0 * TOKENS * K * N] * 3
    forward = rows.iloc[0]
    shapes = [(row.gemm_m, row.gemm_n, row.gemm_k) for row in rows.itertuples(index=False)]
    per_group = TOKENS // GROUPS
    # forward; weight gradient: one K x N output per group, summed over the group's tokens; input gradient
    assert shapes == [(per_group, N, K), (K, N, per_group), (per_group, K, N)]
    assert set(rows.gemm_batch) == {GROUPS}
    for row in rows.itertuples(index=False):
        kernel = kernel_of(tuple(getattr(row, column) for column in OP_KEY_COLUMNS))
        assert kernel.kernel_class is KernelClass.GROUPED_GEMM and kernel.batch == GROUPS
    weights_bytes = GROUPS * K * N * 2
    assert forward.read_bytes >= weights_bytes + TOKENS * K * 2  # every expert's weights, every token


@pytest.fixture(scope="module")
def mixtral():
    return ddlsim.capture(partial(hf_fsdp, family="mixtral"), (1,), ("dp",))


def test_mixtral_capture_flops_match_the_hand_count(mixtral):
    """Hand count for examples/hf_fsdp.py's tiny Mixtral (hidden 128, 2 layers, 4 heads of 32 and
    2 KV heads, FFN 256, 4 experts, top-2, vocabulary 1024, batch 2 x sequence 64 = 128 tokens):

    forward, per layer: Q and O projections 2 x 128 x 128 x 128 = 4,194,304 each; K and V
    2 x 128 x 128 x 64 = 2,097,152 each; causal attention 4 x 2 x 4 x 64^2 x 32 / 2 = 2,097,152;
    router 2 x 128 x 128 x 4 = 131,072; experts on 128 x 2 = 256 routed tokens: gate-up
    2 x 256 x 128 x 512 = 33,554,432 and down 2 x 256 x 256 x 128 = 16,777,216; together
    65,142,784, so 130,285,568 for both layers; output layer 2 x 128 x 128 x 1024 = 33,554,432.
    Forward 163,840,000. Backward: every GEMM twice (input and weight gradients) =
    2 x (163,840,000 - 2 x 2,097,152) = 319,291,392, attention 2.5 x 2 x 2,097,152 = 10,485,760.
    Step: 493,617,152 FLOPs, of which grouped GEMMs 3 x 2 x (33,554,432 + 16,777,216) = 301,989,888.
    """
    hand_count, grouped = 493_617_152, 301_989_888
    compute = mixtral.compute
    assert abs(compute.flop.sum() / hand_count - 1) <= 0.03
    assert abs(compute.flop[compute.op == "aten._grouped_mm"].sum() / grouped - 1) <= 0.03


def test_batched_mm_route_gathers_weights_per_token():
    """transformers' batched_mm experts gather each (token, expert) pair's weights (aten.index
    writes tokens x top-k x 2 FFN x hidden elements) and multiply one token at a time: the same
    FLOPs as grouped GEMMs, and that many more bytes, which the price shows."""
    batched = ddlsim.capture(partial(hf_fsdp, family="mixtral", experts="batched_mm"), (1,), ("dp",))
    grouped = ddlsim.capture(partial(hf_fsdp, family="mixtral"), (1,), ("dp",))
    assert batched.compute.flop.sum() == grouped.compute.flop.sum()
    gathers = batched.compute[batched.compute.op == "aten.index"]
    routed, hidden, ffn, layers = 2 * 64 * 2, 128, 256, 2
    per_token_weights = layers * routed * (2 * ffn * hidden + ffn * hidden) * 2
    assert gathers.write_bytes.sum() >= per_token_weights
    times = [ddlsim.simulate(program, device="h100_sxm").compute_time_s for program in (batched, grouped)]
    assert times[0] > times[1]
