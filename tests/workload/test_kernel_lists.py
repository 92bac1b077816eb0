"""The analytic kernel lists (`ddlsim.workload.kernels`): every kernel has a class, and the FLOPs
of each list are the layer's arithmetic, worked out by hand or by `transformer.arithmetic`, with flash
attention counted as the kernels count it (causal: half of s_q x s_k)."""

from __future__ import annotations

import dataclasses
import math
from collections import Counter

import pytest
from llm_fixtures import FFN, HEADS, SEQ, H, build, llama_like

from ddlsim.compute.kernel_registry import kernels_for, total_flop
from ddlsim.core.types import Phase
from ddlsim.core.work import ComputeTask, KernelClass, ShardSignature
from ddlsim.workload.kernels.attention import ring_steps
from ddlsim.workload.kernels.spec import LayerSpec, layer_keys
from ddlsim.workload.transformer import arithmetic
from ddlsim.workload.transformer.hf_config import decoder_shape, load_config
from ddlsim.workload.transformer.layer import LayerShape
from ddlsim.workload.transformer.shape import DENSE, MOE, MoeShape

HD = H // HEADS
GEMMS = (KernelClass.GEMM, KernelClass.GROUPED_GEMM)


def flash(shape):
    return dataclasses.replace(shape, attention="flash")


def layer_signature(shape, kind=DENSE, batch=1, tp=1, cp=1, sp=False, ep=1) -> ShardSignature:
    keys = layer_keys(shape, tp, cp, sp, kind == MOE, ep)
    return ShardSignature("moe_layer" if kind == MOE else "gpt_layer", tuple(keys.items()), batch, "bf16")


def by_class(kernels) -> Counter:
    flop: Counter = Counter()
    for kernel in kernels:
        flop[kernel.kernel_class] += kernel.flop
    return flop


def test_flash_layer_counts_causal_attention_at_half_and_backward_at_two_and_a_half():
    signature = layer_signature(flash(llama_like()), batch=2, tp=2)
    forward, backward = kernels_for(signature, Phase.FORWARD), kernels_for(signature, Phase.BACKWARD)
    heads = 2 * HEADS // 2  # sequences x local heads
    full = 4.0 * SEQ * SEQ * HD * heads
    attention = [k for k in forward if k.kernel_class is KernelClass.ATTENTION_FORWARD]
    assert len(attention) == 1 and attention[0].causal
    assert (attention[0].m, attention[0].n, attention[0].k, attention[0].batch) == (SEQ, SEQ, HD, heads)
    assert by_class(forward)[KernelClass.ATTENTION_FORWARD] == full / 2
    assert by_class(backward)[KernelClass.ATTENTION_BACKWARD] == 2.5 * full / 2
    # the GEMMs are the layer's matmul weights once per token forward, twice backward
    tokens = 2 * SEQ
    matmul = 2.0 * tokens * llama_like().layer.matmul_params() / 2
    assert by_class(forward)[KernelClass.GEMM] == matmul and by_class(backward)[KernelClass.GEMM] == 2 * matmul
    assert not any(k.kernel_class is KernelClass.GEMM and k.n == SEQ for k in forward)  # no score GEMMs


def test_materialised_layer_keeps_megatrons_score_gemms_and_softmax():
    forward = kernels_for(layer_signature(llama_like()), Phase.FORWARD)
    names = [k.name for k in forward]
    assert "scores" in names and "context" in names and not any(k.kernel_class.is_attention for k in forward)
    assert total_flop(forward) == arithmetic.layer_forward_flop(llama_like(), DENSE, 1, 1)


def test_every_kernel_has_a_class_and_only_collective_issues_are_host_work():
    moe = MoeShape(8, 2, FFN, shared_ffn=FFN, shared_gate=True)
    shapes = [flash(llama_like()), llama_like(), flash(llama_like(moe))]
    for shape in shapes:
        kind = MOE if shape.moe else DENSE
        for phase in (Phase.FORWARD, Phase.BACKWARD):
            for kernel in kernels_for(layer_signature(shape, kind, tp=2, sp=True, ep=2 if shape.moe else 1), phase):
                assert isinstance(kernel.kernel_class, KernelClass)
                assert (kernel.kernel_class is KernelClass.HOST) == (kernel.name == "tensor_parallel_collective_call")
                assert kernel.kernel_class in GEMMS or kernel.kernel_class.is_attention or \
                    kernel.kernel_class is KernelClass.HOST or (kernel.flop == 0 and kernel.bytes > 0)


def test_separate_projections_do_the_same_work_in_more_gemms():
    fused, split = flash(llama_like()), dataclasses.replace(flash(llama_like()), fused_projections=False)
    for phase in (Phase.FORWARD, Phase.BACKWARD):
        one, three = kernels_for(layer_signature(fused), phase), kernels_for(layer_signature(split), phase)
        assert by_class(one)[KernelClass.GEMM] == by_class(three)[KernelClass.GEMM]
    gemms = [k.name for k in kernels_for(layer_signature(split), Phase.FORWARD) if k.is_gemm]
    assert gemms == ["qkv_0", "qkv_1", "qkv_2", "attention_out", "mlp_in_0", "mlp_in_1", "mlp_out"]


def test_sequence_parallelism_shards_the_norms_not_the_gemms():
    shape = flash(llama_like())
    plain, sharded = (kernels_for(layer_signature(shape, tp=4, sp=sp), Phase.FORWARD) for sp in (False, True))
    norm = {k.name: k.bytes for k in plain if k.kernel_class is KernelClass.NORM}
    norm_sp = {k.name: k.bytes for k in sharded if k.kernel_class is KernelClass.NORM}
    # 2 bytes x tokens x h read and written, fp32 statistics per token, the weight
    assert norm["input_norm"] == 4 * SEQ * H + 4 * SEQ + 2 * H
    assert norm_sp["input_norm"] == 4 * SEQ // 4 * H + 4 * SEQ // 4 + 2 * H
    assert [k for k in plain if k.is_gemm] == [k for k in sharded if k.is_gemm]


@pytest.mark.parametrize("cp", [2, 4, 16])
def test_ring_attention_steps_add_up_to_a_causal_rank_share(cp):
    """Load-balanced ring: one causal diagonal step and CP - 1 half-masked steps, each of two chunks
    against one or one against two: s^2 / (2 CP) per rank and head."""
    shape = flash(llama_like())
    spec = LayerSpec.from_signature(layer_signature(shape, cp=cp))
    steps = ring_steps(spec)
    chunk = SEQ // (2 * cp)
    assert steps[0] == (2 * chunk, 2 * chunk, True) and len(steps) == cp
    assert set(steps[1:]) <= {(2 * chunk, chunk, False), (chunk, 2 * chunk, False)}
    forward = kernels_for(layer_signature(shape, cp=cp), Phase.FORWARD)
    attention = [k for k in forward if k.kernel_class is KernelClass.ATTENTION_FORWARD]
    assert len(attention) == cp
    assert sum(k.flop for k in attention) == pytest.approx(4.0 * SEQ * SEQ * HD * HEADS / (2 * cp))


def test_moe_experts_are_grouped_gemms_of_the_routed_tokens():
    moe = MoeShape(experts=8, top_k=2, expert_ffn=FFN)
    shape = flash(llama_like(moe))
    tokens = SEQ
    forward = kernels_for(layer_signature(shape, MOE, ep=2), Phase.FORWARD)
    grouped = [k for k in forward if k.kernel_class is KernelClass.GROUPED_GEMM]
    assert [k.name for k in grouped] == ["experts_in", "experts_out"]
    # 4 local experts, each the 2 ranks' x 2048 tokens x 2 / 8 = 1024 rows
    assert all(k.batch == 4 and k.m == 1024 for k in grouped)
    routed = 2.0 * tokens * 2 * 3 * H * FFN
    assert sum(k.flop for k in grouped) == routed
    router = next(k for k in forward if k.name == "router")
    assert (router.m, router.n, router.k) == (tokens, 8, H)
    mlp = arithmetic.mlp_flop(shape, MOE, tokens, 1)
    assert by_class(forward)[KernelClass.GEMM] + routed == pytest.approx(
        arithmetic.attention_matmul_flop(shape, tokens, 1) + mlp)
    backward = kernels_for(layer_signature(shape, MOE, ep=2), Phase.BACKWARD)
    assert by_class(backward)[KernelClass.GROUPED_GEMM] == 2 * routed
    assert sum(k.name.endswith("_sort") or k.name.endswith("_sort_backward") for k in forward + backward) == 4


def test_capacity_routing_pads_every_experts_buffer():
    shape = flash(llama_like(MoeShape(experts=8, top_k=2, expert_ffn=FFN, capacity_factor=1.25)))
    grouped = [k for k in kernels_for(layer_signature(shape, MOE, ep=4), Phase.FORWARD) if k.is_gemm and k.batch > 1]
    per_rank = math.ceil(SEQ * 2 / 8 * 1.25)  # 640 rows from each of the 4 ranks of the EP group
    assert all(k.batch == 2 and k.m == 4 * per_rank for k in grouped)


def test_mla_layer_counts_the_latent_projections_and_a_192_64_wide_flash_kernel():
    shape = decoder_shape(load_config("deepseek_v3"), seq_len=4096)
    layer = dataclasses.replace(shape, layers=4)
    signature = ShardSignature("mla_dense_layer", tuple(layer_keys(layer, 8).items()), 1, "bf16")
    forward = kernels_for(signature, Phase.FORWARD)
    attention = [k for k in forward if k.kernel_class is KernelClass.ATTENTION_FORWARD][0]
    assert (attention.k, attention.batch) == (192, 128 // 8)
    assert attention.flop == arithmetic.attention_core_flop(shape, 1, 8) / 2
    projections = sum(k.flop for k in forward if k.is_gemm and not k.name.startswith("mlp"))
    assert projections == pytest.approx(arithmetic.attention_matmul_flop(shape, 4096, 8))


def test_recompute_policies_repeat_the_layer_or_the_attention_core():
    shape = flash(llama_like())
    for recompute, expected in (("full", "layer_recompute"), ("selective", "attention_core_recompute")):
        workload = build(shape, 1, recompute=recompute, tensor=1, data=1, micro_batch=1)
        tasks = {task.name: task for task in workload.compute_tasks()}
        recomputed = kernels_for(tasks[expected].signature, Phase.RECOMPUTE)
        if recompute == "full":
            assert recomputed == kernels_for(tasks["layer_forward"].signature, Phase.FORWARD)
        else:
            assert [k.kernel_class for k in recomputed] == [KernelClass.ATTENTION_FORWARD]
        assert tasks[expected].flop == total_flop(recomputed)


def test_task_flops_are_the_kernels_flops():
    workload = build(flash(llama_like()), 2, tensor=2, data=1, micro_batch=2, sequence_parallel=True)
    for task in workload.compute_tasks():
        assert isinstance(task, ComputeTask)
        if task.phase is not Phase.OPTIMIZER:
            assert task.flop == total_flop(kernels_for(task.signature, task.phase))
            assert task.memory_bytes == sum(k.bytes for k in kernels_for(task.signature, task.phase))


def test_gpt2_layer_has_biases_dropout_masks_and_learned_positions():
    config = {**load_config("gpt2"), "resid_pdrop": 0.1, "embd_pdrop": 0.1, "attn_pdrop": 0.1}
    shape = decoder_shape(config, seq_len=1024)
    workload = build(shape, 1, tensor=1, data=1, micro_batch=1)
    tasks = {task.name: task for task in workload.compute_tasks()}
    layer = kernels_for(tasks["layer_forward"].signature, Phase.FORWARD)
    norm = next(k for k in layer if k.name == "input_norm")
    assert norm.bytes == 4 * 1024 * 768 + 8 * 1024 + 4 * 768  # LayerNorm: in, out, mean and rstd, weight and bias
    add = next(k for k in layer if k.name == "attention_residual_add")
    assert add.bytes == 6 * 1024 * 768 + 2 * 768 + 1024 * 768  # branch, its bias and residual in, sum and mask out
    backward = kernels_for(tasks["layer_backward"].signature, Phase.BACKWARD)
    assert sum(k.name.endswith("_bias_grad") for k in backward) == 4  # qkv, attention out, mlp in, mlp out
    assert sum(k.name.endswith("_dropout_backward") for k in backward) == 2
    gemms = [k for k in layer if k.is_gemm]
    assert [k.name for k in gemms] == ["qkv", "attention_out", "mlp_in", "mlp_out"]
    assert gemms[0].bytes == 2 * (1024 * 768 + 768 * 2304 + 1024 * 2304) + 2 * 2304  # bias in the epilogue
    embedding = kernels_for(tasks["embedding_forward"].signature, Phase.FORWARD)
    assert embedding[0].bytes == 4 * 1024 * 768 + 8 * 1024 + 2 * 1024 * 768 + 1024 * 768
    backward = kernels_for(tasks["embedding_backward"].signature, Phase.BACKWARD)
    assert [k.name for k in backward] == ["word_embedding_backward", "position_embedding_backward"]
    # tied: the output layer's gradient (50,257 x 768) read and written, the rows' gradients, ids and mask read
    assert backward[0].bytes == 2 * 2 * 50257 * 768 + 2 * 1024 * 768 + 8 * 1024 + 1024 * 768


def test_megatron_gpt_backward_fuses_weight_gradient_accumulation():
    """Megatron-LM's gradient-accumulation fusion, as examples/megatron_gpt runs it: per layer
    backward 4 data-gradient GEMMs, 4 weight-gradient GEMMs adding into the 16-bit main gradient,
    4 bias-gradient sums and 8 accumulations of bias and norm gradients; with TP 2, 36 launches."""
    layer = LayerShape(1024, 16, 512, causal=True)
    signature = ShardSignature("gpt_layer", tuple(layer.signature_shape(2).items()), 2, "fp16", True)
    backward = kernels_for(signature, Phase.BACKWARD)
    assert sum(k.launches for k in backward) == 36
    assert sum(k.name.endswith("_grad_accumulation") for k in backward) == 8
    wgrads = [k for k in backward if k.name.endswith("_wgrad")]
    assert len(wgrads) == 4 and all(k.bytes == 2 * (k.m * k.k + k.k * k.n) + 4 * k.m * k.n for k in wgrads)
