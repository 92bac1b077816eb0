"""Captured attention: the flash kernel's shape and causal flag, FLOPs as the kernel does them."""

from __future__ import annotations

import json
from functools import partial

import pytest
import torch
import torch.nn.functional as F

import ddlsim
from ddlsim.capture.graph import OP_KEY_COLUMNS
from ddlsim.capture.pricing import kernel_of
from ddlsim.core.work import KernelClass
from examples.llama_fsdp_tp import SHAPES
from examples.llama_fsdp_tp import build as llama

BATCH, HEADS, SEQ, DIM = 2, 4, 128, 32


def _attention_rows(program):
    keys = program.events[program.events.kind == "compute"]
    rows = []
    for row in keys.itertuples(index=False):
        kernel = kernel_of(tuple(getattr(row, column) for column in OP_KEY_COLUMNS))
        if kernel.kernel_class.is_attention:
            rows.append((row, kernel))
    return rows


def _sdpa_program(mask: str):
    def build(mesh):
        q, k, v = (torch.randn(BATCH, HEADS, SEQ, DIM, requires_grad=True) for _ in range(3))

        def step():
            if mask == "causal":
                out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            elif mask == "explicit":
                causal = torch.ones(SEQ, SEQ, dtype=torch.bool).tril()
                out = F.scaled_dot_product_attention(q, k, v, attn_mask=causal)
            else:
                out = F.scaled_dot_product_attention(q, k, v)
            out.sum().backward()

        return step

    return build


@pytest.mark.parametrize("mask, fraction", [("causal", 0.5), ("explicit", 1.0), ("none", 1.0)])
def test_causal_kernels_do_half_the_work_and_masked_ones_all_of_it(mask, fraction):
    program = ddlsim.capture(_sdpa_program(mask), (1,), ("dp",))
    (forward, forward_kernel), (backward, backward_kernel) = _attention_rows(program)
    full = 4 * BATCH * HEADS * SEQ * SEQ * DIM  # QK^T and PV, 2 FLOPs per multiply-add
    assert forward.flop == fraction * full
    assert backward.flop == 2.5 * forward.flop  # five GEMMs of the forward's two
    assert (forward.gemm_m, forward.gemm_n, forward.gemm_k, forward.gemm_batch) == (SEQ, SEQ, DIM, BATCH * HEADS)
    assert forward_kernel.kernel_class is KernelClass.ATTENTION_FORWARD
    assert backward_kernel.kernel_class is KernelClass.ATTENTION_BACKWARD
    assert forward_kernel.causal == backward_kernel.causal == (mask == "causal")


@pytest.fixture(scope="module")
def llama_program():
    return ddlsim.capture(partial(llama, batch=1), (1, 2), ("dp", "tp"))


def test_a_llama_capture_runs_the_causal_flash_kernel(llama_program):
    """transformers builds no mask for unpacked sequences (hf_paths.py): SDPA runs is_causal=True,
    with half the FLOPs of the full s x s attention, as the flash kernel does."""
    tiny, tp, batch = SHAPES["tiny"], 2, 1
    rows = _attention_rows(llama_program)
    assert len(rows) == 2 * tiny["num_hidden_layers"]
    (forward, kernel), backward = rows[0], rows[tiny["num_hidden_layers"]][0]
    heads, seq = tiny["num_attention_heads"] // tp, tiny["seq_len"]
    dim = tiny["hidden_size"] // tiny["num_attention_heads"]
    assert kernel.causal and (forward.gemm_m, forward.gemm_n, forward.gemm_k) == (seq, seq, dim)
    assert forward.gemm_batch == batch * heads
    assert forward.flop == 0.5 * 4 * batch * heads * seq * seq * dim
    assert backward.flop == 2.5 * forward.flop
    assert "attn_mask" not in json.loads(forward.args)[1]


def test_every_layer_owns_its_backward(llama_program):
    """Decoder layers are called with keyword arguments, so torch's ModTracker keeps a layer's
    attention active until backward ends; the capture attributes each op to the module entered
    last (attribution.py), so both layers record the same ops in backward."""
    events = llama_program.events
    backward = events[(events.kind == "compute") & (events.phase == "backward")]
    counts = [backward.module.str.contains(f".layers.{layer}.").sum() for layer in range(2)]
    attention = backward[backward.op.str.contains("flash_attention")]
    assert counts[0] == counts[1] > 0
    assert [module.rsplit(".", 2)[-2] for module in attention.module] == ["1", "0"]


def test_a_causal_kernel_is_priced_faster_than_a_masked_one():
    times = {}
    for mask in ("causal", "explicit"):
        program = ddlsim.capture(_sdpa_program(mask), (1,), ("dp",))
        times[mask] = ddlsim.simulate(program, device="h100_sxm").compute_time_s
    assert times["causal"] < times["explicit"]
