"""Issue 24, first acceptance row: capture-vs-analytic compute within 3 % per layer and per
iteration, for Llama-3-8B, Qwen2, Mixtral (grouped GEMM), GPT-2 and the vTrain GPT, at sequence
2,048 and 8,192, with and without (full) recompute.

Both sides are priced by the same kernel roofline: H100 SXM with its published constants for the
transformers decoders (flash attention, bf16), the A100 with ``compute=a100_megatron`` for the
vTrain GPT (Megatron-LM of 2021: materialised attention, fp16, its fused kernels). Shapes are the
shipped configs' (width, heads, KV heads, FFN, vocabulary, experts) cut to 2 layers; the vTrain GPT
is its 3.6 B shape (d_model 3,072, 32 heads). `compute_cases.py` has the programs and the
accounting; a failing case prints its table per phase and kernel class.

Three levels: per layer; the iteration without its optimizer step (every layer, the embedding,
the output layer and the loss); the whole iteration. Every case is within 3 % at every level
(the largest difference, 2.5 %: the vTrain GPT's whole iteration at 2,048 tokens, where the
program also zeroes its gradient buffer, which the list leaves out). Two fixes got the last
cases there: the
capture's fusion writes back the last version of every storage a run updates in place (the
Adam step's master weights and moments), and the vTrain GPT's list stacks the Q, K and V
gradients back into one tensor, as the program (and Megatron's split of the QKV output) does;
examples/megatron_gpt steps Megatron's fp16 optimizer, fp32 master weights and moments.
"""

from __future__ import annotations

from functools import cache

import pytest
from compute_cases import Model, compare

TOLERANCE = 0.03
MODELS = {
    "llama3_8b": Model("llama3_8b", "llama3_8b"),
    "qwen2_72b": Model("qwen2_72b", "qwen2_72b"),
    "mixtral_8x7b": Model("mixtral_8x7b", "mixtral_8x7b"),
    "gpt2": Model("gpt2", "gpt2"),
    "vtrain_gpt_3.6b": Model("vtrain_gpt_3.6b", gpt={"d_model": 3072, "heads": 32}, device="a100_80gb",
                             compute="a100_megatron"),
}
CASES = [(model, seq, recompute) for model in MODELS for seq in (2048, 8192) for recompute in (False, True)]


@cache
def comparison(model: str, seq: int, recompute: bool):
    return compare(MODELS[model], seq, recompute)


def _case(model: str, seq: int, recompute: bool) -> pytest.param:
    return pytest.param(model, seq, recompute, marks=[pytest.mark.slow],
                        id=f"{model}-{seq}-{'full' if recompute else 'none'}")


def _check(model: str, seq: int, recompute: bool, level: str) -> None:
    result = comparison(model, seq, recompute)
    error = {"layer": result.layer_error, "step": result.step_error, "iteration": result.iteration_error}[level]
    assert abs(error) <= TOLERANCE, f"{model}, sequence {seq}, recompute {recompute}:\n{result.table()}"


@pytest.mark.parametrize(("model", "seq", "recompute"), [_case(*case) for case in CASES])
def test_layer_compute_agrees(model, seq, recompute):
    _check(model, seq, recompute, "layer")


@pytest.mark.parametrize(("model", "seq", "recompute"), [_case(*case) for case in CASES])
def test_iteration_compute_without_the_optimizer_agrees(model, seq, recompute):
    _check(model, seq, recompute, "step")


@pytest.mark.parametrize(("model", "seq", "recompute"), [_case(*case) for case in CASES])
def test_iteration_compute_agrees(model, seq, recompute):
    _check(model, seq, recompute, "iteration")


def test_gemm_and_attention_kernels_are_the_same_on_both_sides():
    """The fast check (GPT-2 at 2,048 tokens): per layer, the GEMMs and the flash kernels
    cost the same on both sides to 0.1 %, because both front doors emit the same shapes and count
    the same FLOPs (causal flash at half of s^2); the whole layer is within 3 %."""
    result = comparison("gpt2", 2048, False)
    checked = 0
    for key, (captured, modelled) in result.layer_by_class.items():
        if key.endswith((":gemm", ":attention_forward", ":attention_backward")):
            assert modelled == pytest.approx(captured, rel=1e-3), key
            checked += 1
    assert checked == 4 and abs(result.layer_error) <= TOLERANCE
