"""Small decoder LLMs whose collective bytes are easy to work out by hand."""

from __future__ import annotations

from collections import Counter

from ddlsim.core.types import CollectiveCall, Phase, Precision
from ddlsim.core.work import Workload
from ddlsim.workload.parallel import ParallelConfig
from ddlsim.workload.transformer.layer import LayerShape
from ddlsim.workload.transformer.shape import DecoderShape, MoeShape
from ddlsim.workload.transformer.workload import build_decoder_workload

GIB = 2**30
# h 1024, 16 heads of 64, 4 KV heads (K and V 256 wide each), SwiGLU MLP of 4096, 2048 tokens,
# 8 layers, a 32,000-token untied vocabulary, RMSNorm, no biases, no dropout.
H, HEADS, KV_HEADS, FFN, SEQ, LAYERS, VOCAB = 1024, 16, 4, 4096, 2048, 8, 32000


def llama_like(moe: MoeShape | None = None, layers: int = LAYERS) -> DecoderShape:
    layer = LayerShape(H, HEADS, SEQ, ffn_hidden=FFN, kv_heads=KV_HEADS, causal=True, gated_mlp=True, bias=False,
                       rmsnorm=True, dropout=False)
    return DecoderShape(layer, layers, VOCAB, vocab_multiple=1, tied_embeddings=False, position_embeddings=False,
                        moe=moe)


def mixtral_like() -> DecoderShape:
    """Every MLP an MoE of 8 experts of width 4096, top-2 routing."""
    return llama_like(MoeShape(experts=8, top_k=2, expert_ffn=FFN))


def build(shape: DecoderShape, global_batch: int, memory_bytes: int = 80 * GIB, **parallel) -> Workload:
    return build_decoder_workload("toy", shape, ParallelConfig(**parallel), memory_bytes, global_batch=global_batch,
                                  num_steps=0, precision=Precision.BF16, grad_precision=Precision.BF16)


def calls_named(workload: Workload, name: str) -> list[tuple[CollectiveCall, str, int]]:
    """(call, block name, block repeat) for every call named `name`."""
    return [(task, block.name, block.repeat) for block in workload.blocks for task in block.tasks
            if isinstance(task, CollectiveCall) and task.name == name]


def per_layer_counts(workload: Workload, block: str = "forward") -> Counter:
    """Calls per layer and micro-batch, by (name, phase), in the layer blocks called `block`."""
    counts: Counter = Counter()
    for item in workload.blocks:
        if item.name == block:
            for task in item.tasks:
                if isinstance(task, CollectiveCall):
                    counts[(task.name, task.phase.value)] += task.count
    return counts


def phase_counts(workload: Workload, block: str) -> dict[str, dict[str, int]]:
    counts = per_layer_counts(workload, block)
    table: dict[str, dict[str, int]] = {}
    for (name, phase), count in counts.items():
        table.setdefault(name, {})[phase] = count
    return table


__all__ = ["GIB", "Phase", "build", "calls_named", "llama_like", "mixtral_like", "per_layer_counts",
           "phase_counts"]
