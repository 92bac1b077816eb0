"""Golden tests, one per parallelism: collective calls per layer with their bytes worked out by hand.

The toy model (`llm_fixtures.llama_like`): h = 1024, 16 heads of 64, 4 KV heads (K and V are
256 wide each), a SwiGLU MLP of 4096, s = 2048 tokens, 8 layers, an untied vocabulary of 32,000,
RMSNorm, no biases, no dropout, bf16 (2 bytes). Per layer: attention 1024 x (1024 + 2 x 256)
+ 1024 x 1024 = 2,621,440 weights, MLP 3 x 1024 x 4096 = 12,582,912, norms 2 x 1024 = 2,048.
"""

import pytest
from llm_fixtures import GIB, build, calls_named, llama_like, mixtral_like, phase_counts

from ddlsim.core.types import CollectiveOp, GroupLayout, Phase
from ddlsim.workload.parallel import ParallelConfig
from ddlsim.workload.transformer.plan import partition_decoder

TP2_LAYER = (2_621_440 + 12_582_912) // 2 + 2_048  # 7,604,224 parameters of one layer on one of 2 TP ranks
TP2_STAGE = 8 * TP2_LAYER + 16_000 * 1024 + (1024 + 16_000 * 1024)  # + half the embedding, norm + half the output


def only(workload, name):
    found = calls_named(workload, name)
    assert len(found) == 1, f"{name}: {len(found)} calls"
    return found[0][0]


@pytest.mark.parametrize("zero", [1, 2])
def test_zero_1_and_2_reduce_scatter_gradients_and_all_gather_parameters_once_per_iteration(zero):
    """TP 2, DP 4, ZeRO 1 (Megatron's distributed optimizer) or 2 (gradients sharded too, the
    same collectives).

    One TP rank holds P = 8 x 7,604,224 + 16,000 x 1,024 (its half of the embedding) + 1,024 +
    16,000 x 1,024 (final norm, half of the output layer) = 93,602,816 parameters. After the
    last micro-batch the DP group (4 ranks, stride 2: ranks 0, 2, 4, 6) reduce-scatters 2 x P =
    187,205,632 bytes of bf16 gradients; each rank steps Adam on ceil(P / 4) = 23,400,704
    parameters and the group all-gathers the 187,205,632 bytes of updated parameters.
    """
    assert TP2_STAGE == 93_602_816
    workload = build(llama_like(), 8, tensor=2, data=4, zero=zero, micro_batch=1)
    scatter, gather = only(workload, "dp_gradient_reduce_scatter"), only(workload, "dp_param_all_gather")
    assert (scatter.op, scatter.size_bytes, scatter.group) == (CollectiveOp.REDUCE_SCATTER, 187_205_632,
                                                               GroupLayout(4, 2, 8))
    assert (gather.op, gather.size_bytes, gather.group, gather.phase) == (CollectiveOp.ALL_GATHER, 187_205_632,
                                                                          GroupLayout(4, 2, 8), Phase.OPTIMIZER)
    assert not calls_named(workload, "dp_gradient_all_reduce")
    names = [block.name for block in workload.blocks if not block.per_micro_batch]
    assert names.index("gradient_reduce_scatter") < names.index("optimizer") < names.index("param_all_gather")
    adam = next(task for task in workload.compute_tasks() if task.name == "optimizer_step")
    assert adam.signature.shape_dict["params"] == 23_400_704


@pytest.mark.parametrize(("zero", "state_bytes"), [
    (0, 18 * 93_602_816), (1, 9 * 93_602_816), (2, 6 * 93_602_816),
    (3, 4.5 * 93_602_816 + 8 * 7_604_224)])
def test_model_states_per_zero_stage(zero, state_bytes):
    """Megatron-Core's distributed optimizer (docs/user-guide/features/dist_optimizer.md), bf16
    weights with fp32 main gradients: 2 + 4 + 12 bytes per parameter, sharded over N = 4:
    ZeRO 1: 6 + 12/4 = 9 bytes; ZeRO 2: 2 + 16/4 = 6; ZeRO 3: 18/4 = 4.5, plus the unsharded
    weights of the current and the prefetched layer and its fp32 gradients (8 x 7,604,224 bytes)."""
    plan = partition_decoder(llama_like(), ParallelConfig(tensor=2, data=4, zero=zero, micro_batch=1), 80 * GIB, 8)
    assert plan.stages[0].state_bytes == pytest.approx(state_bytes)


def test_zero_3_gathers_every_layer_in_forward_and_backward_and_scatters_its_gradients():
    """TP 2, DP 4, ZeRO 3 (FSDP, parameters resharded after forward), per layer and micro-batch:
    forward: all-gather of the layer's 7,604,224 bf16 parameters = 15,208,448 bytes over the
    DP group (4, 2, 8); backward: the same all-gather again, then a reduce-scatter of the
    15,208,448 bytes of gradients. The embedding (16,384,000 parameters on this rank, 32,768,000
    bytes) is gathered in forward and its gradients scattered in backward; the output layer
    (16,385,024: 32,770,048 bytes) is gathered in forward and backward. No per-iteration
    gradient reduction remains.
    """
    workload = build(llama_like(), 8, tensor=2, data=4, zero=3, micro_batch=1)
    forward, backward = phase_counts(workload, "forward"), phase_counts(workload, "backward")
    assert forward["fsdp_param_all_gather"] == {"forward": 1}
    assert backward["fsdp_param_all_gather"] == {"backward": 1}
    assert backward["fsdp_gradient_reduce_scatter"] == {"backward": 1}
    for call, _, _ in calls_named(workload, "fsdp_param_all_gather") + \
            calls_named(workload, "fsdp_gradient_reduce_scatter"):
        assert call.group == GroupLayout(4, 2, 8)
    sizes = {(block, call.op.value, call.size_bytes) for name in ("fsdp_param_all_gather",
                                                                    "fsdp_gradient_reduce_scatter")
             for call, block, _ in calls_named(workload, name)}
    assert sizes == {("forward", "all_gather", 15_208_448), ("backward", "all_gather", 15_208_448),
                     ("backward", "reduce_scatter", 15_208_448), ("embedding_forward", "all_gather", 32_768_000),
                     ("embedding_backward", "reduce_scatter", 32_768_000),
                     ("output_forward", "all_gather", 32_770_048), ("output_backward", "all_gather", 32_770_048),
                     ("output_backward", "reduce_scatter", 32_770_048)}
    assert not calls_named(workload, "dp_gradient_all_reduce") and not calls_named(workload, "dp_param_all_gather")


def test_expert_parallel_dispatch_and_combine_all_to_alls():
    """Mixtral-like (8 experts of width 4096, top-2), TP 1, DP 8, EP 4, micro-batch 1.

    Each rank routes T = 2,048 tokens to 2 experts: every all-to-all moves 2,048 x 2 x 1,024 x 2
    bytes = 8,388,608 over the EP group of 4 ranks carved out of DP (size 4, stride 1). Per MoE
    layer and micro-batch: forward dispatch and combine, both again in the (full) recompute and
    in backward. A rank holds 8 / 4 = 2 experts of 3 x 1,024 x 4,096 = 12,582,912 weights per
    layer (25,165,824), shared by DP 8 / EP 4 = 2 ranks: their gradients are all-reduced over
    that expert-data group (size 2, stride 4): 2 x 8 x 25,165,824 = 402,653,184 bytes. The dense
    parameters (per layer: norms 2,048 + attention 2,621,440 + router 8 x 1,024 = 2,631,680;
    8 layers, embedding 32,768,000, final norm and output 32,769,024: 86,590,464) are all-reduced
    over all 8 ranks: 173,180,928 bytes.
    """
    workload = build(mixtral_like(), 16, tensor=1, data=8, expert=4, micro_batch=1)
    forward, backward = phase_counts(workload, "moe_forward"), phase_counts(workload, "moe_backward")
    for name in ("ep_dispatch_all_to_all", "ep_combine_all_to_all"):
        assert forward[name] == {"forward": 1} and backward[name] == {"recompute": 1, "backward": 1}
        for call, _, repeat in calls_named(workload, name):
            assert (call.op, call.size_bytes, call.group, repeat) == (CollectiveOp.ALL_TO_ALL, 8_388_608,
                                                                      GroupLayout(4, 1, 8), 8)
    experts = only(workload, "edp_gradient_all_reduce")
    assert (experts.size_bytes, experts.group) == (402_653_184, GroupLayout(2, 4, 8))
    dense = only(workload, "dp_gradient_all_reduce")
    assert (dense.size_bytes, dense.group) == (173_180_928, GroupLayout(8, 1, 8))
    assert workload.plan["ep_message_bytes"] == 8_388_608


def test_expert_parallel_with_tensor_parallel_follows_megatron_core_dispatcher():
    """TP 2 (sequence parallel, as Megatron-Core requires for MoE), DP 4, EP 4: each TP rank
    dispatches its half of the tokens, 8,388,608 / 2 = 4,194,304 bytes, over the EP group (size
    4, stride 2); the received tokens are all-gathered over TP (8,388,608 bytes) for the TP-split
    experts and reduce-scattered back before the combine."""
    workload = build(mixtral_like(), 8, tensor=2, data=4, expert=4, micro_batch=1, sequence_parallel=True)
    forward = [(task.name, task.size_bytes) for block in workload.blocks if block.name == "moe_forward"
               for task in block.tasks if hasattr(task, "size_bytes")]
    assert forward[-4:] == [("ep_dispatch_all_to_all", 4_194_304), ("tp_moe_all_gather", 8_388_608),
                            ("tp_moe_reduce_scatter", 8_388_608), ("ep_combine_all_to_all", 4_194_304)]
    assert {call.group for call, _, _ in calls_named(workload, "ep_dispatch_all_to_all")} == {GroupLayout(4, 2, 8)}


def test_context_parallel_ring_passes_of_k_and_v():
    """TP 2, CP 2, DP 2, micro-batch 1: a rank holds T = 2,048 / 2 = 1,024 tokens.

    Its K/V chunk: 1,024 tokens x (256 + 256) / 2 (its 2 of 4 KV heads) x 2 bytes = 524,288 bytes,
    passed to its CP neighbour CP - 1 = 1 time per layer in forward, again in the recompute, and
    in backward together with the K/V-gradient pass; the pairs are (2, stride 2) over 8 ranks.
    TP all-reduces carry T h 2 = 2,097,152 bytes; the cross-entropy's 4 x 1,024 = 4,096. Dense
    gradients are reduced over DP x CP = 4 ranks (stride 2). The layer's forward FLOPs:
    2 x 1,024 x 7,602,176 + 4 x 1,024 x 2,048 x 1,024 / 2 = 19,864,223,744.
    """
    workload = build(llama_like(), 4, tensor=2, context=2, data=2, micro_batch=1)
    forward, backward = phase_counts(workload, "forward"), phase_counts(workload, "backward")
    assert forward["cp_kv_send_recv"] == {"forward": 1}
    assert backward["cp_kv_send_recv"] == {"recompute": 1, "backward": 1}
    assert backward["cp_kv_grad_send_recv"] == {"backward": 1}
    for call, _, _ in calls_named(workload, "cp_kv_send_recv") + calls_named(workload, "cp_kv_grad_send_recv"):
        assert (call.op, call.size_bytes, call.group) == (CollectiveOp.SEND_RECV, 524_288, GroupLayout(2, 2, 8))
    assert {call.size_bytes for call, _, _ in calls_named(workload, "tp_attention_all_reduce")} == {2_097_152}
    assert only(workload, "tp_cross_entropy_all_reduce").size_bytes == 4_096
    assert only(workload, "dp_gradient_all_reduce").group == GroupLayout(4, 2, 8)
    layer = next(task for task in workload.compute_tasks() if task.name == "layer_forward")
    assert layer.flop == 19_864_223_744 and layer.signature.shape_dict["cp"] == 2
    assert (workload.plan["num_gpus"], workload.plan["global_batch"]) == (8, 4)


def test_sequence_parallel_turns_all_reduces_into_all_gathers_and_reduce_scatters():
    """TP 4 with SP, PP 2, micro-batch 1: every TP collective moves b s h 2 = 2,048 x 1,024 x 2 =
    4,194,304 bytes. Per layer: all-gather and reduce-scatter around attention and around the
    MLP, in forward, recompute and backward. The embedding's output is reduce-scattered (its
    gradient all-gathered in backward, as a capture of the DTensor program shows), the output
    layer's input all-gathered (forward) and its gradient reduce-scattered (backward).
    Stages exchange their sequence shard: 4,194,304 / 4 = 1,048,576 bytes, with no all-gather."""
    workload = build(llama_like(), 2, tensor=4, pipeline=2, data=1, micro_batch=1, sequence_parallel=True)
    forward, backward = phase_counts(workload, "forward"), phase_counts(workload, "backward")
    for block in ("attention", "mlp"):
        for op in ("all_gather", "reduce_scatter"):
            assert forward[f"tp_{block}_{op}"] == {"forward": 1}
            assert backward[f"tp_{block}_{op}"] == {"recompute": 1, "backward": 1}
    sizes = {call.size_bytes for block in workload.blocks for call in block.tasks
             if getattr(call, "name", "").startswith("tp_") and "cross_entropy" not in call.name}
    assert sizes == {4_194_304}
    assert only(workload, "tp_embedding_reduce_scatter").phase is Phase.FORWARD
    assert only(workload, "tp_embedding_all_gather").phase is Phase.BACKWARD
    assert only(workload, "tp_output_all_gather").phase is Phase.FORWARD
    assert only(workload, "tp_output_reduce_scatter").phase is Phase.BACKWARD
    assert not calls_named(workload, "tp_embedding_all_reduce") and not calls_named(workload, "pp_gather_forward")
    assert only(workload, "pp_send_forward").size_bytes == 1_048_576


def test_interleaved_pipeline_chunks_and_sends():
    """PP 2 with 2 virtual stages: 4 model chunks of 8 / 4 = 2 layers; chunk c runs on stage c mod 2.
    The embedding runs on chunk 0, the output layer on chunk 3; chunks 0-2 send activations
    forward, 1-3 gradients back, each b s h 2 = 4,194,304 bytes (TP 1). Stage 0 holds chunks 0
    and 2 (4 layers, 60,825,600 parameters, and the embedding 32,768,000); stage 1 chunks 1 and 3
    (4 layers and the final norm and output layer, 32,769,024)."""
    workload = build(llama_like(), 4, tensor=1, pipeline=2, virtual_stages=2, data=1, micro_batch=1)
    blocks = {block.name: block for block in workload.blocks}
    assert blocks["forward"].repeat == 2 and blocks["forward"].stages == ()
    assert blocks["embedding_forward"].stages == (0,) and blocks["output_forward"].stages == (3,)
    assert blocks["pipeline_send_forward"].stages == (0, 1, 2)
    assert blocks["pipeline_send_backward"].stages == (1, 2, 3)
    assert only(workload, "pp_send_forward").size_bytes == 4_194_304
    assert (workload.plan["virtual_stages"], workload.plan["pp_degree"], workload.plan["micro_batches"]) == (2, 2, 4)
    plan = partition_decoder(llama_like(), ParallelConfig(tensor=1, pipeline=2, virtual_stages=2, data=1,
                                                          micro_batch=1), 80 * GIB, 4)
    assert plan.stage_params == (4 * 15_206_400 + 32_768_000, 4 * 15_206_400 + 32_769_024)


def test_interleaved_pipeline_keeps_more_micro_batches_in_flight():
    """Full recompute keeps each layer's input, 2 s b h = 4,194,304 bytes, and chunk 0 its token
    ids, 8 s = 16,384 bytes. Interleaved (p 2, v 2, m 4; Megatron-Core's schedule table runs
    micro-batch groups of 2 chunk after chunk): stage 0 warms up with 2 (p - 1) + (v - 1) p = 4
    forwards and then alternates a forward with a backward (of chunk 2 first): it peaks at
    5 forwards of 2 layers, four of them of chunk 0; stage 1 at (v - 1) p + 1 = 3 (1F1B: 2 and 1
    micro-batches of 4 layers). Plus one layer's working activations (RMSNorm, QKV and MLP inputs
    2,048 x 1,024 x 8 = 16,777,216; Q, K, V and the projection input 2,048 x (2,048 + 1,024 +
    2,048) = 10,485,760; fused SwiGLU input and down-projection input 2,048 x 4,096 x 6 =
    50,331,648; softmax 16 x 2,048^2 x 2 = 134,217,728: 211,812,352) and on the last stage the
    output layer's: fp32 softmax 2,048 x 4 x 32,000 = 262,144,000, final norm input and output
    2 x 2,048 x 1,024 x 2 = 8,388,608: 270,532,608."""
    working, output, kept, ids = 211_812_352, 270_532_608, 4_194_304, 16_384
    interleaved = partition_decoder(llama_like(), ParallelConfig(tensor=1, pipeline=2, virtual_stages=2, data=1,
                                                                 micro_batch=1), 80 * GIB, 4)
    assert [memory.activation_bytes for memory in interleaved.stages] == \
        [5 * 2 * kept + 4 * ids + working, 3 * 2 * kept + working + output]
    plain = partition_decoder(llama_like(), ParallelConfig(tensor=1, pipeline=2, data=1, micro_batch=1), 80 * GIB, 4)
    assert [memory.activation_bytes for memory in plain.stages] == [2 * (4 * kept + ids) + working,
                                                                    1 * 4 * kept + working + output]


def test_selective_recompute_recomputes_only_the_attention_core():
    """Selective recompute (Korthikanti et al. 2022, Sec. 5), TP 2: the backward reruns only
    scores and context, 4 b s^2 h / t = 4 x 2,048^2 x 1,024 / 2 = 8,589,934,592 FLOPs, with no
    collective. Kept per layer (TP 1): all activations but the softmax, 211,812,352 -
    134,217,728 = 77,594,624 bytes, and the token ids (16,384); plus one layer's softmax during
    its recompute and the output layer's 270,532,608."""
    workload = build(llama_like(), 2, tensor=2, data=1, micro_batch=1, recompute="selective")
    backward = next(block for block in workload.blocks if block.name == "backward")
    recompute = [task for task in backward.tasks if task.phase is Phase.RECOMPUTE]
    assert [task.name for task in recompute] == ["attention_core_recompute"]
    assert recompute[0].flop == 8_589_934_592 and recompute[0].signature.model_kind == "attention_core"
    plan = partition_decoder(llama_like(), ParallelConfig(tensor=1, data=1, micro_batch=1, recompute="selective"),
                             80 * GIB, 1)
    assert plan.stages[0].activation_bytes == 8 * 77_594_624 + 16_384 + 134_217_728 + 270_532_608
    assert workload.plan["recompute"] == "selective" and not workload.plan["activation_checkpointing"]


@pytest.mark.parametrize(("tp", "sp", "policy", "per_layer"), [
    (1, False, "none", "34 + 5as/h"), (4, False, "none", "10 + 24/t + 5as/(ht)"),
    (4, True, "none", "34/t + 5as/(ht)"), (4, False, "selective", "10 + 24/t"), (4, True, "selective", "34/t"),
    (4, False, "full", "2"), (4, True, "full", "2/t")])
def test_gpt_activations_follow_korthikanti_table_2(tp, sp, policy, per_layer):
    """Korthikanti et al. 2022, Table 2: activation bytes per layer in units of s b h for a GPT
    layer (MHA, 4h GeLU MLP, dropout), by tensor parallelism, sequence parallelism and recompute.
    One stage, one micro-batch: the stage keeps L layers' worth, plus for selective recompute one
    layer's attention core (5as/(ht)) and for full recompute one layer's whole activations; the
    embedding's token ids (8 sb) and dropout mask (sbh, / t with SP), the output layer's fp32
    softmax (4 s b V / t) and the final norm's input and output (4 sbh, / t with SP)."""
    from ddlsim.workload.transformer.layer import LayerShape
    from ddlsim.workload.transformer.shape import DecoderShape

    s, b, h, a, layers, t = 1024, 2, 1024, 16, 4, tp
    shape = DecoderShape(LayerShape(h, a, s, causal=True), layers, 50257)
    plan = partition_decoder(shape, ParallelConfig(tensor=tp, data=1, micro_batch=b, recompute=policy,
                                                   sequence_parallel=sp), 80 * GIB, b)
    core = 5 * a * s / (h * t)
    unit = {"34 + 5as/h": 34 + 5 * a * s / h, "10 + 24/t + 5as/(ht)": 10 + 24 / t + core,
            "34/t + 5as/(ht)": 34 / t + core, "10 + 24/t": 10 + 24 / t, "34/t": 34 / t, "2": 2, "2/t": 2 / t}[per_layer]
    full = (34 / t if sp else 10 + 24 / t) + core
    extra = {"none": 0.0, "selective": core, "full": full}[policy]
    split = t if sp else 1
    ends = 8 * s * b + s * b * h / split + s * b * 4 * shape.local_vocab(tp) + 4 * s * b * h / split
    assert plan.stages[0].activation_bytes == pytest.approx(s * b * h * (layers * unit + extra) + ends)
