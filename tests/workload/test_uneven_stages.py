"""Uneven pipeline stages: Megatron-Core's splits, the automatic choice, and plans that use them.

`megatron_layers` below restates, independently of `stages.py`, how Megatron-Core assigns layers
to (pipeline rank, virtual stage) (`get_num_layers_to_build` in transformer_block.py and
`get_transformer_layer_offset` in transformer_layer.py of NVIDIA/Megatron-LM): the uneven
first/last stages, the embedding/loss accounting, and interleaving.
"""

import pytest
from llm_fixtures import GIB, build, llama_like

from ddlsim.core.errors import ConfigError
from ddlsim.workload.parallel import ParallelConfig
from ddlsim.workload.transformer.plan import partition_decoder
from ddlsim.workload.transformer.stages import describe, split_layers, stage_layers


def megatron_layers(layers, pp, v, first=None, last=None, embedding=False, loss=False):
    """Layers to build per chunk (chunk = vp_stage x pp + pp_rank), as Megatron-Core builds them."""
    result = {}
    for rank in range(pp):
        if first is not None or last is not None:
            middle_layers = layers - (first or 0) - (last or 0)
            middle_stages = pp - (first is not None) - (last is not None)
            per_rank = middle_layers // middle_stages if middle_stages else 0
            if rank == 0 and first is not None:
                per_rank = first
            if rank == pp - 1 and last is not None:
                per_rank = last
        else:
            per_rank = (layers + embedding + loss) // pp
        for vp_stage in range(v):
            build = per_rank // v
            if embedding and rank == 0 and vp_stage == 0:
                build -= 1
            if loss and rank == pp - 1 and vp_stage == v - 1:
                build -= 1
            result[vp_stage * pp + rank] = build
    return tuple(result[chunk] for chunk in range(pp * v))


@pytest.mark.parametrize(("layers", "pp", "v", "first", "last", "megatron"), [
    (32, 4, 1, 0, 0, {}),
    (32, 4, 2, 0, 0, {}),
    (126, 16, 1, 0, 0, {"embedding": True, "loss": True}),  # Llama 3 405B: 7, 8 x 14, 7
    (126, 16, 2, 0, 0, {"embedding": True, "loss": True}),
    (126, 16, 4, 0, 0, {"embedding": True, "loss": True}),
    (126, 8, 4, 0, 0, {"embedding": True, "loss": True}),
    (31, 4, 1, 0, 0, {"loss": True}),  # one layer short: the output layer's stage takes it
    (80, 9, 1, 0, 0, {"loss": True}),
    (32, 4, 1, 7, 7, {"first": 7, "last": 7}),
    (32, 4, 2, 6, 6, {"first": 6, "last": 6}),
    (30, 4, 1, 6, 0, {"first": 6}),
    (30, 3, 1, 0, 8, {"last": 8}),
    (10, 2, 1, 4, 6, {"first": 4, "last": 6}),
])
def test_splits_follow_megatron_core(layers, pp, v, first, last, megatron):
    chunks = split_layers(layers, pp, v, first, last)
    assert chunks == megatron_layers(layers, pp, v, **megatron)
    assert sum(chunks) == layers


def test_layers_that_no_megatron_accounting_splits_give_fewer_layers_to_the_end_stages():
    """29 layers on 4 stages: neither 29, 30 nor 31 divides by 4; the middle stages take the even
    share rounded up (8), the ends the rest, the last stage the fewer: 7, 8, 8, 6 (Megatron-Core's
    num_layers_in_first/last_pipeline_stage = 7 / 6)."""
    assert split_layers(29, 4) == (7, 8, 8, 6) == megatron_layers(29, 4, 1, first=7, last=6)
    assert split_layers(9, 2) == (5, 4)  # 10 = 9 + the loss divides by 2
    with pytest.raises(ConfigError, match="parallel.virtual_stages = 2: cannot split the 9 layers"):
        split_layers(9, 2, 2)  # 9, 10 and 11 do not divide into 4 chunks, and no middle stage takes more


def test_describe_is_compact():
    assert describe((7,) + (8,) * 14 + (7,)) == "7,8x14,7"
    assert describe((8,) * 16) == "8x16" and describe((5,)) == "5" and describe((3, 4)) == "3,4"


def llama3_405b(seq_len=8192):
    import ddlsim.workload.models  # noqa: F401
    from ddlsim.core.registry import MODELS

    return MODELS.make("hf", config="llama3_405b", precision="bf16", seq_len=seq_len, global_batch=2048)


def test_llama3_405b_on_16_stages_has_one_layer_fewer_on_the_first_and_last():
    """Llama 3 paper, Sec. 3.3.2: 126 layers on PP 16, one layer fewer on the first and last stage."""
    model = llama3_405b()
    parallel = ParallelConfig(tensor=8, pipeline=16, zero=1, sequence_parallel=True, micro_batch=1, gpus=8192,
                              max_gpus=8192)
    plan = partition_decoder(model.decoder, parallel, 80 * GIB, model.global_batch)
    assert plan.stage_layers == (7,) + (8,) * 14 + (7,)
    shape, tp = model.decoder, 8
    layer = shape.layer_params_per_rank("dense", tp)[0]
    assert plan.stage_params[0] == 7 * layer + shape.embedding_params_per_rank(tp)
    assert plan.stage_params[1] == 8 * layer
    assert plan.stage_params[15] == 7 * layer + shape.head_params_per_rank(tp, 16)
    assert sum(plan.stage_params) == pytest.approx(shape.params() / tp, rel=1e-3)  # norms are replicated
    assert [memory.layers for memory in plan.stages] == list(plan.stage_layers)


def test_llama3_405b_interleaved_puts_the_missing_layers_in_the_end_chunks():
    """With virtual stages Megatron-Core's embedding/loss accounting takes the layer from the
    first chunk (stage 0) and from the last chunk (stage 15): 128 / 64 = 2 layers per chunk."""
    model = llama3_405b()
    parallel = ParallelConfig(tensor=8, pipeline=16, virtual_stages=4, zero=1, sequence_parallel=True,
                              micro_batch=1, gpus=8192, max_gpus=8192)
    workload = model.build_workload(parallel, 80 * GIB)
    assert workload.plan["stage_layers"] == "7,8x14,7" and workload.plan["layers_per_stage"] == 8
    forward = [block for block in workload.blocks if block.name == "forward"]
    per_chunk = {chunk: block.repeat for block in forward for chunk in block.stages}
    assert per_chunk == {chunk: 1 if chunk in (0, 63) else 2 for chunk in range(64)}


def test_explicit_first_and_last_stage_layers_reach_blocks_memory_and_rows():
    """8 layers on PP 4 with first = last = 1: the middle stages take 3 each (Megatron-Core's
    num_layers_in_first/last_pipeline_stage). Full recompute keeps each layer's input (4,194,304
    bytes) for the micro-batches in flight: stage 1 holds 3 of 3 layers, stage 0 4 of 1 layer."""
    workload = build(llama_like(), 8, tensor=1, data=1, pipeline=4, micro_batch=1, first_stage_layers=1,
                     last_stage_layers=1)
    assert workload.plan["stage_layers"] == "1,3x2,1"
    repeats = {block.stages: block.repeat for block in workload.blocks if block.name == "backward"}
    assert repeats == {(0, 3): 1, (1, 2): 3}
    plan = partition_decoder(llama_like(), ParallelConfig(tensor=1, data=1, pipeline=4, micro_batch=1,
                                                          first_stage_layers=1, last_stage_layers=1), 80 * GIB, 8)
    even = partition_decoder(llama_like(), ParallelConfig(tensor=1, data=1, pipeline=4, micro_batch=1), 80 * GIB, 8)
    kept = 4_194_304
    assert plan.stages[1].activation_bytes - even.stages[1].activation_bytes == 3 * (3 - 2) * kept
    assert even.stages[0].activation_bytes - plan.stages[0].activation_bytes == 4 * (2 - 1) * kept


def test_stage_layers_sum_the_chunks_of_each_stage():
    chunks = split_layers(126, 16, 2)
    assert stage_layers(chunks, 16) == (7,) + (8,) * 14 + (7,)
