"""The analytic memory model against Megatron-Core's closed forms (NVIDIA/Megatron-LM):
docs/user-guide/features/dist_optimizer.md (bytes per parameter), megatron/training/
theoretical_memory_usage.py (weights and optimizer of the most loaded shard; activations of the
first stage, Korthikanti et al. 2022 Table 2) and megatron/core/pipeline_parallel/schedules.py
(warm-up micro-batches per stage, the interleaved schedule table). The closed forms are restated
here from those sources, not computed by the code under test.
"""

import random

import pytest
from llm_fixtures import GIB, llama_like

from ddlsim.core.types import Precision
from ddlsim.workload.parallel import ParallelConfig
from ddlsim.workload.transformer.arithmetic import attention_core_bytes, layer_activation_bytes
from ddlsim.workload.transformer.layer import LayerShape
from ddlsim.workload.transformer.layout import ParallelLayout
from ddlsim.workload.transformer.memory import (
    chunks_in_flight,
    peak_in_flight,
    stage_activation_parts,
    state_bytes_per_param,
    warmup_forwards,
)
from ddlsim.workload.transformer.plan import partition_decoder
from ddlsim.workload.transformer.shape import DecoderShape

# ---- model states ------------------------------------------------------------------------------------


@pytest.mark.parametrize(("param_bytes", "grad_bytes", "replicated", "sharded"), [
    (2, 2, 20, (4, 16)),  # fp16 parameters, fp16 gradients
    (2, 4, 18, (6, 12)),  # bf16 parameters, fp32 gradients
    (4, 4, 16, (8, 8)),  # fp32 parameters, fp32 gradients
])
def test_bytes_per_parameter_are_megatron_cores_table(param_bytes, grad_bytes, replicated, sharded):
    d = 8
    assert state_bytes_per_param(0, d, param_bytes, grad_bytes) == replicated
    assert state_bytes_per_param(1, d, param_bytes, grad_bytes) == sharded[0] + sharded[1] / d


def test_zero_2_and_3_shard_gradients_then_weights_too():
    d = 4  # bf16 weights, fp32 gradients, 12 bytes of optimizer state
    assert state_bytes_per_param(2, d) == 2 + (4 + 12) / d
    assert state_bytes_per_param(3, d) == (2 + 4 + 12) / d


@pytest.mark.parametrize(("precision", "grad_precision", "main_grads", "per_param"), [
    (Precision.BF16, Precision.BF16, "", 6 + 12 / 4),  # Megatron-LM: bf16 accumulates gradients in fp32
    (Precision.BF16, Precision.BF16, "bf16", 4 + 16 / 4),  # --grad-reduce-in-bf16
    (Precision.FP16, Precision.FP16, "", 4 + 16 / 4),
    (Precision.FP16, Precision.FP32, "", 6 + 12 / 4),  # gpt's grad_reduce_precision = fp32
    (Precision.FP32, Precision.FP32, "", 8 + 8 / 4),
])
def test_main_gradients_follow_megatron_lm_defaults(precision, grad_precision, main_grads, per_param):
    parallel = ParallelConfig(tensor=2, data=4, zero=1, micro_batch=1, main_grads_dtype=main_grads)
    plan = partition_decoder(llama_like(), parallel, 80 * GIB, 8, precision=precision, grad_precision=grad_precision)
    assert plan.stages[0].state_bytes == pytest.approx(per_param * plan.stages[0].params)


@pytest.mark.parametrize(("pp", "distributed"), [(1, False), (4, True), (4, False), (8, True)])
def test_weights_and_optimizer_of_the_most_loaded_shard(pp, distributed):
    """`compute_weight_and_optimizer_memory`: (attention + MLP) x L / PP + embedding, over TP, plus
    the replicated norms (L x 2h + the final norm h) / PP, times 18 or 6 + 12 / DP bytes; with
    PP 1 the untied output layer's h V / TP too. Megatron spreads the final norm over the stages
    in this estimate; it sits on the last stage, so stage 0 holds h / PP fewer when PP > 1."""
    shape, tp, dp = llama_like(layers=16), 2, 4
    h, kv, ffn, vocab = 1024, 256, 4096, 32000
    attention, mlp, norms = 2 * h * h + 2 * h * kv, 3 * h * ffn, 2 * h
    tp_sharded = ((attention + mlp) * 16 / pp + h * vocab) / tp + (h * vocab / tp if pp == 1 else 0)
    replicated = (norms * 16 + h) / pp
    per_param = 6 + 12 / dp if distributed else 18
    megatron = (tp_sharded + replicated) * per_param
    parallel = ParallelConfig(tensor=tp, data=dp, pipeline=pp, zero=1 if distributed else 0, micro_batch=1)
    plan = partition_decoder(shape, parallel, 80 * GIB, 4 * 16)
    final_norm_elsewhere = h / pp * per_param if pp > 1 else 0.0
    assert plan.stages[0].state_bytes == pytest.approx(megatron - final_norm_elsewhere, rel=1e-12)


# ---- activations of one layer -------------------------------------------------------------------------


def gpt(seq=2048, attention="materialized", layers=8, heads=16):
    return DecoderShape(LayerShape(1024, heads, seq, causal=True), layers, 50257, attention=attention)


@pytest.mark.parametrize(("tp", "sp"), [(1, False), (4, False), (4, True), (8, True)])
def test_gpt_layer_without_the_core_is_megatrons_closed_form(tp, sp):
    """theoretical_memory_usage.py: sbh(18 + 4 ffn/h) / t with SP (`compute_activation_memory`),
    sbh(10 + 24/t) without (`compute_activation_memory_without_sp`), ffn = 4h."""
    shape, s, b, h = gpt(), 2048, 2, 1024
    closed = s * b * h * ((18 + 4 * 4) / tp if sp else 10 + 24 / tp)
    assert layer_activation_bytes(shape, "dense", b, tp, 1, sp, attention_core=False, saved=True) == closed


def test_flash_keeps_its_log_sum_exp_instead_of_the_score_matrices():
    s, b, tp, heads = 4096, 1, 4, 16
    flash, materialized = gpt(s, "flash"), gpt(s, "materialized")
    lse = 4 * heads * s * b / tp
    assert attention_core_bytes(flash, b, tp, saved=True) == lse
    assert attention_core_bytes(materialized, b, tp, saved=True) == 5 * heads * s * s * b / tp  # 5as^2b / t
    without_core = layer_activation_bytes(materialized, "dense", b, tp, 1, True, attention_core=False, saved=True)
    assert layer_activation_bytes(flash, "dense", b, tp, 1, True, saved=True) == without_core + lse
    assert layer_activation_bytes(flash, "dense", b, tp, 1, True, attention_core=False, saved=True) == without_core


def test_fused_swiglu_saves_three_values_per_mlp_column():
    shape, s, b = llama_like(), 2048, 1
    gelu_like = layer_activation_bytes(shape, "dense", b, 1, attention_core=False)  # roofline traffic: 4 values
    assert gelu_like - layer_activation_bytes(shape, "dense", b, 1, attention_core=False, saved=True) == \
        2 * s * b * 4096


@pytest.mark.parametrize("attention", ["flash", "materialized"])
def test_context_and_sequence_parallelism_shard_every_saved_activation(attention):
    shape, b = gpt(8192, attention), 1
    whole = layer_activation_bytes(shape, "dense", b, 1, 1, False, saved=True)
    assert layer_activation_bytes(shape, "dense", b, 8, 4, True, saved=True) == pytest.approx(whole / 32)


# ---- the pipeline: micro-batches in flight ---------------------------------------------------------------


def megatron_warmup(p, rank, v, m, group=None):
    """`get_pp_rank_microbatches`: warm-up forwards of pipeline rank `rank`."""
    total = m * v
    warmup = p - rank - 1 if v == 1 else 2 * (p - rank - 1) + (v - 1) * (group or p)
    return min(warmup, total)


@pytest.mark.parametrize(("p", "v", "m"), [(4, 1, 8), (8, 1, 3), (4, 2, 4), (4, 2, 8), (8, 4, 16), (16, 2, 16)])
def test_in_flight_counts_per_schedule(p, v, m):
    layout = ParallelLayout(tp=1, cp=1, dp=1, pp=p, vp=v)
    for stage in range(p):
        assert warmup_forwards(stage, p, v, m) == megatron_warmup(p, stage, v, m)
        assert chunks_in_flight(stage, layout, m) == min(megatron_warmup(p, stage, v, m) + 1, m * v)


def test_one_f_one_b_caps_in_flight_micro_batches_when_they_are_few():
    """theoretical_memory_usage.py: activations x min(1, m / p) without interleaving."""
    layout = ParallelLayout(tp=1, cp=1, dp=1, pp=8)
    assert [chunks_in_flight(stage, layout, 3) for stage in range(8)] == [3, 3, 3, 3, 3, 3, 2, 1]


@pytest.mark.parametrize(("p", "v"), [(2, 2), (4, 2), (4, 4), (8, 2), (16, 4)])
def test_interleaved_stage_0_holds_megatrons_memory_penalty(p, v):
    """Stage 0 holds L (1 + (p - 1) / (p v)) layers' worth (the interleaving penalty)."""
    layers, per_layer, m = p * v * 3, 1.0, 4 * p
    weights = (3 * per_layer,) * v
    assert peak_in_flight(weights, 0, p, m) == pytest.approx(layers * (1 + (p - 1) / (p * v)) * per_layer)


def simulated_peak(weights, stage, p, m):
    """Walk Megatron-Core's interleaved schedule on `stage`: the schedule table (`get_schedule_table`,
    groups of p micro-batches chunk after chunk), warm-up forwards, then one forward and one
    backward (chunks in reverse order) per step, then the cool-down backwards."""
    v = len(weights)
    table = [chunk for start in range(0, m, p) for chunk in range(v) for _ in range(start, min(start + p, m))]
    warmup = megatron_warmup(p, stage, v, m)
    held = peak = 0.0
    for k in range(warmup):
        held += weights[table[k]]
        peak = max(peak, held)
    for k in range(m * v - warmup):
        held += weights[table[warmup + k]]
        peak = max(peak, held)
        held -= weights[v - 1 - table[k]]
    return peak


@pytest.mark.parametrize("seed", range(6))
def test_uneven_chunks_peak_as_the_walked_schedule(seed):
    rng = random.Random(seed)
    p, v = rng.choice([2, 4, 8]), rng.choice([2, 3, 4])
    m = p * rng.choice([1, 2, 3, 5])
    for stage in range(p):
        weights = tuple(float(rng.randint(1, 9)) for _ in range(v))
        assert peak_in_flight(weights, stage, p, m) == pytest.approx(simulated_peak(weights, stage, p, m))


# ---- a whole first stage against theoretical_memory_usage.py ------------------------------------------------


@pytest.mark.parametrize("tp", [2, 4])
def test_first_stage_activations_are_megatrons_with_sp_and_selective_recompute(tp):
    """`compute_activation_memory` (SP, selective): [sbh (18 + 4 ffn/h) L + 8 s b p + s b h p] / t
    on the first stage (1F1B, m >= p). The token ids are on every TP rank, not split (+ 8 s b p (1 - 1/t));
    one layer's attention core is rebuilt during its backward (`working`)."""
    s, b, h, layers, p, a = 2048, 1, 1024, 8, 4, 16
    shape = gpt(s, "materialized", layers, a)
    parallel = ParallelConfig(tensor=tp, data=1, pipeline=p, micro_batch=b, recompute="selective",
                              sequence_parallel=True)
    plan = partition_decoder(shape, parallel, 80 * GIB, 2 * p)
    parts = stage_activation_parts(shape, plan.layout, 0, plan.options)
    megatron = (s * b * h * (18 + 4 * 4) * layers + 8 * s * b * p + s * b * h * p) / tp
    assert parts.kept == pytest.approx(megatron + 8 * s * b * p * (1 - 1 / tp))
    assert parts.working == 5 * a * s * s * b / tp and parts.output == 0.0
