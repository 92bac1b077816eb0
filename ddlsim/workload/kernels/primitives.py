"""Kernel constructors shared by every kernel list: GEMMs, grouped GEMMs, flash attention,
memory-bound kernels and host-only collective issues.

Bytes are DRAM traffic: every operand read once and every result written once (16-bit
activations unless stated). A GEMM's FLOPs are 2 m n k per product; flash attention's are what
the kernel computes (`flash_flop`).
"""

from __future__ import annotations

from ddlsim.core.work import Kernel, KernelClass
from ddlsim.workload.transformer.layer import ACTIVATION_BYTES

A = ACTIVATION_BYTES
LSE_BYTES = 4  # flash attention's fp32 log-sum-exp, one per query row and head
FLASH_BACKWARD_FLOP_RATIO = 2.5  # five s_q x s_k products in backward against two in forward


def gemm(name: str, m: int, n: int, k: int, batch: int = 1, element_bytes: int = A, *, bias: bool = False,
         accumulate_bytes: int = 0) -> Kernel:
    """A (batched) GEMM C = A B: 2mnk FLOP each; A, B read and C written once. `bias` adds an
    epilogue bias vector of n; `accumulate_bytes` > 0 makes C an accumulator of that element size
    (read and written: Megatron's gradient-accumulation fusion) instead of a fresh 16-bit output."""
    out = 2 * accumulate_bytes * m * n if accumulate_bytes else element_bytes * m * n
    size = batch * (element_bytes * (m * k + k * n) + out) + (element_bytes * n if bias else 0)
    return Kernel(name, flop=2.0 * m * n * k * batch, bytes=float(size), m=m, n=n, k=k, batch=batch,
                  kernel_class=KernelClass.GEMM)


def grouped_gemm(name: str, groups: int, m: int, n: int, k: int) -> Kernel:
    """`groups` GEMMs of m x n x k in one launch (one per local expert, m its tokens), each with
    its own operands: 2 m n k FLOP and A (mk + kn + mn) bytes per group."""
    return Kernel(name, flop=2.0 * m * n * k * groups, bytes=float(A * groups * (m * k + k * n + m * n)),
                  m=m, n=n, k=k, batch=groups, kernel_class=KernelClass.GROUPED_GEMM)


def memory(name: str, size_bytes: float, launches: int = 1,
           kernel_class: KernelClass = KernelClass.ELEMENTWISE) -> Kernel:
    """A memory-bound kernel moving `size_bytes` through DRAM."""
    return Kernel(name, bytes=float(size_bytes), launches=launches, kernel_class=kernel_class)


def host_calls(name: str, count: int) -> list[Kernel]:
    """`count` framework calls that launch no GPU kernel (the issue of collectives)."""
    return [Kernel(name, launches=count, kernel_class=KernelClass.HOST)] if count else []


def collective_calls(tp: int, count: int) -> list[Kernel]:
    """The host side of a layer's `count` tensor-parallel collective calls (their GPU time is the
    network's): each is one framework operation the host issues between the kernels."""
    return host_calls("tensor_parallel_collective_call", count if tp > 1 else 0)


def flash_flop(queries: int, keys: int, qk_dim: int, v_dim: int, heads: int, causal: bool) -> float:
    """Forward FLOPs of flash attention as the kernel does them: Q K^T and P V, 2 s_q s_k (d_qk + d_v)
    per head, halved when a causal mask lets it skip the upper triangle (FlashAttention-2/3
    count it so)."""
    flop = 2.0 * queries * keys * (qk_dim + v_dim) * heads
    return flop / 2 if causal else flop


def flash_forward(name: str, queries: int, keys: int, qk_dim: int, v_dim: int, heads: int, kv_heads: int,
                  causal: bool) -> Kernel:
    """One flash-attention forward over `heads` (sequences x query heads; K and V have `kv_heads`,
    read once each, as grouped-query kernels do): reads Q, K, V, writes the output and the fp32
    log-sum-exp."""
    size = A * (heads * queries * (qk_dim + v_dim) + kv_heads * keys * (qk_dim + v_dim)) + LSE_BYTES * heads * queries
    return Kernel(name, flop=flash_flop(queries, keys, qk_dim, v_dim, heads, causal), bytes=float(size),
                  m=queries, n=keys, k=qk_dim, batch=heads, causal=causal,
                  kernel_class=KernelClass.ATTENTION_FORWARD)


def flash_backward(name: str, queries: int, keys: int, qk_dim: int, v_dim: int, heads: int, kv_heads: int,
                   causal: bool) -> Kernel:
    """Its backward: recomputes the probabilities inside the kernel (2.5 x the forward FLOPs);
    reads Q, K, V, the output, its gradient and the log-sum-exp, writes dQ, dK, dV."""
    q_side = heads * queries * (qk_dim + 2 * v_dim)  # Q, O, dO
    kv_side = kv_heads * keys * (qk_dim + v_dim)  # K, V
    size = A * (q_side + kv_side + heads * queries * qk_dim + kv_side) + LSE_BYTES * heads * queries
    return Kernel(name, flop=FLASH_BACKWARD_FLOP_RATIO * flash_flop(queries, keys, qk_dim, v_dim, heads, causal),
                  bytes=float(size), m=queries, n=keys, k=qk_dim, batch=heads, causal=causal,
                  kernel_class=KernelClass.ATTENTION_BACKWARD)
