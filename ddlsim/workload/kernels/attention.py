"""The attention core of a layer shard: flash kernels (with ring-attention steps under context
parallelism) or Megatron's materialised scores (`megatron.py`).

Flash attention with context parallelism (Megatron-Core's load-balanced ring): the sequence is
cut into 2 CP chunks of c = s / 2CP tokens and rank r holds chunks r and 2CP - 1 - r (s / CP
queries). Ring step 0 attends its own keys under the causal mask (s/CP x s/CP, causal); each of
the CP - 1 other steps attends one key block it received without a mask, half of it being
masked out by causality: either both query chunks against the block's first chunk
(s/CP x c) or the second query chunk against both (c x s/CP). Every rank does one step of each
kind in turn, as the ring delivers them; the table lookup for each step is that step's key
length. A causal layer's total is s^2 / 2 per sequence and head, as without CP. A non-causal
(encoder) layer runs CP full s/CP x s/CP steps.
"""

from __future__ import annotations

from ddlsim.core.work import Kernel
from ddlsim.workload.kernels.primitives import flash_backward, flash_forward
from ddlsim.workload.kernels.spec import LayerSpec


def ring_steps(spec: LayerSpec) -> list[tuple[int, int, bool]]:
    """(queries, keys, causal) of every flash kernel one rank runs for one sequence and head."""
    s_q, causal = spec.queries, spec.layer.causal
    if spec.cp == 1:
        return [(s_q, s_q, causal)]
    if not causal:
        return [(s_q, s_q, False)] * spec.cp
    chunk = s_q // 2
    return [(s_q, s_q, True)] + [(s_q, chunk, False) if step % 2 else (chunk, s_q, False)
                                 for step in range(1, spec.cp)]


def flash_kernels(spec: LayerSpec, backward: bool) -> list[Kernel]:
    """The flash-attention kernels of one layer (forward or backward) on this rank."""
    build = flash_backward if backward else flash_forward
    name = "flash_attention_backward" if backward else "flash_attention_forward"
    steps = ring_steps(spec)
    return [build(name if len(steps) == 1 else f"{name}_ring_{index}", queries, keys, spec.qk_dim, spec.v_dim,
                  spec.batch * spec.heads, spec.batch * spec.kv_heads, causal)
            for index, (queries, keys, causal) in enumerate(steps)]
