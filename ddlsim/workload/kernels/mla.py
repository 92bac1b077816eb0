"""Multi-head latent attention's projections (DeepSeek-V2/V3) in a fused decoder layer.

Forward: Q's down-projection, its RMSNorm and up-projection (or one Q projection without a Q
rank), the joint KV down-projection (latent and the shared rotary key), the latent's RMSNorm
and its up-projection to per-head keys and values, then one kernel that applies the rotary
positions and assembles Q and K (the rotary key broadcast to every head). The down-projections
are replicated over tensor parallelism; V is read in place from the up-projection's output.
Backward mirrors it, and adds up the Q and KV paths' input gradients.
"""

from __future__ import annotations

from ddlsim.core.work import Kernel, KernelClass
from ddlsim.workload.kernels.parts import STAT_BYTES, grad_sums, linear_backward
from ddlsim.workload.kernels.primitives import A, gemm, memory
from ddlsim.workload.kernels.spec import LayerSpec


def _latent_norm(name: str, tokens: int, width: int, backward: bool = False) -> Kernel:
    """RMSNorm over a latent of `width`: reads and writes it (backward: reads gradient and input)."""
    size = (3 if backward else 2) * A * tokens * width + STAT_BYTES * tokens + A * width
    return memory(name, size, kernel_class=KernelClass.NORM)


def mla_in(spec: LayerSpec) -> list[Kernel]:
    m, tokens, h, heads = spec.mla, spec.tokens, spec.layer.d_model, spec.heads
    assert m is not None
    if m.q_lora_rank:
        q = [gemm("q_down", tokens, m.q_lora_rank, h), _latent_norm("q_norm", tokens, m.q_lora_rank),
             gemm("q_up", tokens, heads * m.qk_dim, m.q_lora_rank)]
    else:
        q = [gemm("q_proj", tokens, heads * m.qk_dim, h)]
    table = 2 * A * spec.queries * m.qk_rope_dim
    assemble = A * tokens * (heads * m.qk_dim + heads * m.qk_nope_dim + m.qk_rope_dim) \
        + 2 * A * tokens * heads * m.qk_dim + table  # Q, K's per-head part and the rotary key in; Q, K out
    return [*q, gemm("kv_down", tokens, m.kv_lora_rank + m.qk_rope_dim, h),
            _latent_norm("kv_norm", tokens, m.kv_lora_rank),
            gemm("kv_up", tokens, heads * (m.qk_nope_dim + m.v_head_dim), m.kv_lora_rank),
            memory("rope", assemble)]


def mla_in_backward(spec: LayerSpec) -> list[Kernel]:
    m, tokens, h, heads = spec.mla, spec.tokens, spec.layer.d_model, spec.heads
    assert m is not None
    table = 2 * A * spec.queries * m.qk_rope_dim
    reads = A * tokens * heads * (2 * m.qk_dim + m.v_head_dim)  # dQ, dK, dV
    writes = A * tokens * (heads * m.qk_dim + heads * (m.qk_nope_dim + m.v_head_dim) + m.qk_rope_dim)
    kernels = [memory("rope_backward", reads + writes + table)]
    if m.q_lora_rank:
        kernels += [*linear_backward("q_up", tokens, heads * m.qk_dim, m.q_lora_rank),
                    _latent_norm("q_norm_backward", tokens, m.q_lora_rank, backward=True),
                    *linear_backward("q_down", tokens, m.q_lora_rank, h)]
    else:
        kernels += linear_backward("q_proj", tokens, heads * m.qk_dim, h)
    kernels += [*linear_backward("kv_up", tokens, heads * (m.qk_nope_dim + m.v_head_dim), m.kv_lora_rank),
                _latent_norm("kv_norm_backward", tokens, m.kv_lora_rank, backward=True),
                *linear_backward("kv_down", tokens, m.kv_lora_rank + m.qk_rope_dim, h),
                *grad_sums("qkv_dgrad_sum", tokens, h, 1)]
    return kernels
