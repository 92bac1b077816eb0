"""The MLP of an MoE layer: router, routing, grouped GEMMs of the routed experts, shared experts.

Routing is uniform: with dropless routing (capacity factor 0) every expert receives its share
of the tokens x top-k assignments; with a capacity factor c every expert's buffer holds
ceil(tokens x top-k / experts x c) rows from each rank, padding included (GShard/Switch).
A rank holds experts / EP experts and, after the all-to-all, the rows its EP group routed to
them: R = tokens x top-k x c rows in all (as `arithmetic.mlp_flop` counts), split over TP by
the experts' width. Forward:

- ``router``: the T x experts logits GEMM (replicated), then ``router_topk``: softmax and
  top-k (reads the logits; writes fp32 weights and int64 expert indices);
- ``dispatch``: the permutation that gathers the R assigned rows in expert order (and, with
  EP > 1, ``dispatch_sort``: the received rows sorted by local expert, as Megatron-Core's
  all-to-all dispatcher does);
- ``experts_in`` and ``experts_out``: grouped GEMMs, one group per local expert (one launch
  each, as ``torch._grouped_mm`` and Megatron-Core's GroupedGEMM run them), with the
  activation between them;
- ``combine``: the rows back in token order, weighted and summed over the top-k (and the shared
  experts' output added).

Shared experts are a dense MLP of their total width (split over TP), with Qwen2-MoE's sigmoid
gate. Backward mirrors each step and adds up the router's, the dispatch's (and the shared
experts') input gradients.
"""

from __future__ import annotations

import math

from ddlsim.core.work import Kernel
from ddlsim.workload.kernels.parts import activation, grad_sums, linear_backward, projections, projections_backward
from ddlsim.workload.kernels.primitives import A, gemm, grouped_gemm, memory
from ddlsim.workload.kernels.spec import LayerSpec
from ddlsim.workload.transformer.shape import MoeShape

WEIGHT_BYTES, INDEX_BYTES = 4, 8  # fp32 routing weights, int64 expert indices


def routed_rows(spec: LayerSpec) -> tuple[int, int]:
    """(local expert groups, rows of one group) on this rank (module docstring)."""
    moe = spec.moe
    assert moe is not None
    groups = moe.experts // spec.ep
    assignments = spec.tokens * moe.top_k
    if moe.capacity_factor:
        return groups, spec.ep * math.ceil(assignments / moe.experts * moe.capacity_factor)
    return groups, math.ceil(spec.ep * assignments / moe.experts)


def _widths(spec: LayerSpec, width: int) -> tuple[int, ...]:
    return (width, width) if spec.layer.gated_mlp else (width,)


def _layer_routing(spec: LayerSpec) -> tuple[MoeShape, int, int, int, int, int]:
    """(MoE settings, tokens, d_model, expert groups, rows per group, expert FFN width per TP rank):
    what the forward and backward lists of one MoE MLP both start from."""
    moe = spec.moe
    assert moe is not None
    groups, rows = routed_rows(spec)
    return moe, spec.tokens, spec.layer.d_model, groups, rows, moe.expert_ffn // spec.tp


def moe_mlp(spec: LayerSpec) -> list[Kernel]:
    moe, tokens, h, groups, rows, f = _layer_routing(spec)
    routed = groups * rows
    sort = [memory("dispatch_sort", 2 * A * routed * h)] if spec.ep > 1 else []
    kernels = [gemm("router", tokens, moe.experts, h),
               memory("router_topk", A * tokens * moe.experts + (WEIGHT_BYTES + INDEX_BYTES) * tokens * moe.top_k),
               memory("dispatch", 2 * A * routed * h + INDEX_BYTES * routed), *sort,
               grouped_gemm("experts_in", groups, rows, sum(_widths(spec, f)), h),
               activation(spec, "experts_activation", routed, f),
               grouped_gemm("experts_out", groups, rows, h, f),
               *[memory("combine_sort", 2 * A * routed * h)] * (spec.ep > 1)]
    shared = moe.shared_ffn // spec.tp
    combine = A * routed * h + WEIGHT_BYTES * routed + A * tokens * h
    if shared:
        kernels += [*projections("shared_in", tokens, _widths(spec, shared), h, spec.split),
                    activation(spec, "shared_activation", tokens, shared), gemm("shared_out", tokens, h, shared)]
        if moe.shared_gate:
            kernels.append(gemm("shared_gate", tokens, 1, h))
        combine += A * tokens * h
    return [*kernels, memory("combine", combine)]


def moe_mlp_backward(spec: LayerSpec) -> list[Kernel]:
    moe, tokens, h, groups, rows, f = _layer_routing(spec)
    routed = groups * rows
    width_in = sum(_widths(spec, f))
    shared = moe.shared_ffn // spec.tp
    gate = shared and moe.shared_gate
    combine = A * tokens * h + 2 * A * routed * h + 2 * WEIGHT_BYTES * routed + (2 * A * tokens * h if gate else 0)
    kernels = [memory("combine_backward", combine),
               *[memory("combine_sort_backward", 2 * A * routed * h)] * (spec.ep > 1),
               grouped_gemm("experts_out_dgrad", groups, rows, f, h),
               grouped_gemm("experts_out_wgrad", groups, f, h, rows),
               activation(spec, "experts_activation", routed, f, backward=True),
               grouped_gemm("experts_in_dgrad", groups, rows, h, width_in),
               grouped_gemm("experts_in_wgrad", groups, width_in, h, rows),
               *[memory("dispatch_sort_backward", 2 * A * routed * h)] * (spec.ep > 1),
               memory("dispatch_backward", 2 * A * routed * h + INDEX_BYTES * routed),
               memory("router_topk_backward", 2 * A * tokens * moe.experts + WEIGHT_BYTES * tokens * moe.top_k),
               *linear_backward("router", tokens, moe.experts, h)]
    partials = 2  # the dispatch's and the router's input gradients
    if shared:
        kernels += [*linear_backward("shared_out", tokens, h, shared),
                    activation(spec, "shared_activation", tokens, shared, backward=True),
                    *projections_backward("shared_in", tokens, _widths(spec, shared), h, spec.split)]
        partials += 1
        if gate:
            kernels += linear_backward("shared_gate", tokens, 1, h)
            partials += 1
    return kernels + grad_sums("moe_dgrad_sum", tokens, h, partials - 1)
