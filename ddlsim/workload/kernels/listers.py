"""Which kernel list each model kind's signatures get (`registry.register_kernels`).

Layers (``gpt_layer`` and ``megatron_layer``: dense, standard attention; ``dense_layer``,
``moe_layer``, ``mla_dense_layer``, ``mla_moe_layer`` from `ddlsim.workload.transformer`): with flash
attention the fused layer of today's stacks (`fused.py`), else Megatron-LM's of 2021
(`megatron.py`), whose materialised attention it was measured with; MoE and MLA layers are
always the fused layer (with materialised attention where asked). ``attention_core`` and
``decoder_attention_core``: the attention core that selective recompute runs again.
``lm_head``, ``gpt_embedding``: `heads.py` with the signature key ``fused_runs``, else
Megatron's. ``adam_shard`` (and a layer signature in the optimizer phase): Adam with fp32
master weights.
"""

from __future__ import annotations

import math

from ddlsim.compute.kernel_registry import register_kernels, shape_value
from ddlsim.core.types import Phase
from ddlsim.core.work import Kernel, ShardSignature
from ddlsim.workload.kernels import fused, heads, megatron
from ddlsim.workload.kernels.spec import LayerSpec

LAYER_KINDS = ("gpt_layer", "megatron_layer", "dense_layer", "moe_layer", "mla_dense_layer", "mla_moe_layer")
CORE_KINDS = ("attention_core", "decoder_attention_core")


def _is_fused(spec: LayerSpec) -> bool:
    return spec.flash or spec.moe is not None or spec.mla is not None


@register_kernels(*LAYER_KINDS)
def _layer(signature: ShardSignature, phase: Phase) -> list[Kernel]:
    spec = LayerSpec.from_signature(signature)
    if phase is Phase.OPTIMIZER:
        return megatron.optimizer_kernels(spec.layer.params_per_rank(spec.tp))
    return (fused if _is_fused(spec) else megatron).layer_kernels(spec, phase)


@register_kernels(*CORE_KINDS)
def _attention_core(signature: ShardSignature, phase: Phase) -> list[Kernel]:
    spec = LayerSpec.from_signature(signature)
    return fused.attention_core(spec) if _is_fused(spec) else megatron.attention_core_kernels(spec)


def _head_spec(signature: ShardSignature) -> heads.HeadSpec:
    keys = signature.shape_dict
    tp = keys.get("tp", 1)
    return heads.HeadSpec(shape_value(signature, "d_model"), math.ceil(shape_value(signature, "vocab") / tp),
                          shape_value(signature, "seq_len"), signature.local_batch, tp, bool(keys.get("sp", 0)),
                          bool(keys.get("positions", 0)), bool(keys.get("dropout", 0)), bool(keys.get("rmsnorm", 0)),
                          bool(keys.get("tied", 0)))


@register_kernels("lm_head")
def _lm_head(signature: ShardSignature, phase: Phase) -> list[Kernel]:
    spec = _head_spec(signature)
    if phase is Phase.OPTIMIZER:
        return megatron.optimizer_kernels(spec.local_vocab * spec.d_model + 2 * spec.d_model)
    if signature.shape_dict.get("fused_runs"):
        return heads.lm_head_kernels(spec, phase)
    return megatron.lm_head_kernels(spec.d_model, spec.local_vocab, spec.seq_len, spec.batch, phase)


@register_kernels("gpt_embedding")
def _embedding(signature: ShardSignature, phase: Phase) -> list[Kernel]:
    spec = _head_spec(signature)
    if phase is Phase.OPTIMIZER:
        return megatron.optimizer_kernels(spec.local_vocab * spec.d_model + spec.seq_len * spec.d_model)
    if signature.shape_dict.get("fused_runs"):
        return heads.embedding_kernels(spec, phase)
    return megatron.embedding_kernels(spec.d_model, spec.local_vocab, spec.seq_len, spec.batch, spec.tp, phase)


@register_kernels("adam_shard")
def _adam(signature: ShardSignature, phase: Phase) -> list[Kernel]:
    return megatron.optimizer_kernels(shape_value(signature, "params"))
