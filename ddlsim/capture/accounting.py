"""What one aten op costs: FLOPs (torch's flop-counter formulas), bytes read and written, GEMM shape.

- FLOPs come from `torch.utils.flop_counter`'s registry (matrix multiplies, attention,
  convolutions and their backward ops); other ops count 0 FLOP, as the flop counter does.
- Bytes: every tensor argument read once and every output written once, each counted by the
  memory it spans (an expanded tensor of stride 0 reads its storage once). An in-place op reads
  and writes its destination, except ops that only overwrite it (``fill_``, ``copy_``, random
  draws such as ``bernoulli_``). Gathers (``index``, ``embedding``, ...) read the rows they
  select, not their whole source; in-place scatters (``index_put_``, ``index_add_``, ...) read
  their indices and values and write as many bytes as the values.
- Ops that launch no kernel (views, allocations, metadata queries, profiler markers) are not
  compute: `launches_kernel` is False for them and they are not recorded.
- The GEMM shape (m, n, k, batch) of a matrix multiply lets the kernel roofline apply its tile
  and wave quantisation; attention and convolution keep their FLOPs without a tile shape.
"""

from __future__ import annotations

from typing import Any

import torch
from torch.utils._pytree import tree_leaves
from torch.utils.flop_counter import flop_registry

NO_KERNEL = frozenset({
    "empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided", "empty_permuted",
    "_unsafe_view", "lift_fresh", "detach", "alias", "set_", "resize_", "_local_scalar_dense", "sym_size",
    "sym_stride", "sym_numel", "sym_storage_offset", "is_same_size", "_reshape_alias",
    "_has_compatible_shallow_copy_type",
    "record_stream", "_record_function_enter_new", "_record_function_exit", "device", "dim", "is_nonzero",
    "_assert_async", "_assert_tensor_metadata", "_functional_assert_async", "_nested_tensor_from_mask_left_aligned",
    "item", "_propagate_xla_data", "_version", "_copy_from_and_resize",
})
NO_KERNEL_NAMESPACES = frozenset({"prim", "profiler"})
# In-place ops that overwrite their destination without reading it.
OVERWRITE_OPS = frozenset({"bernoulli_", "fill_", "zero_", "uniform_", "normal_", "random_", "exponential_",
                           "geometric_", "log_normal_", "cauchy_", "copy_"})
# Ops that read only the rows they select (their output), not the whole source tensor.
GATHER_OPS = frozenset({"index", "index_select", "gather", "embedding", "take"})
# In-place ops that write only the selected rows of their destination (reading the values).
SCATTER_INPLACE_OPS = frozenset({"index_put_", "_index_put_impl_", "index_add_", "index_copy_", "scatter_",
                                 "scatter_add_", "scatter_reduce_", "masked_scatter_"})
MATMUL_OPS = frozenset({"mm", "addmm", "addmm_", "bmm", "baddbmm", "baddbmm_", "_addmm_activation"})
# Ops whose FLOPs follow another op's formula: in-place GEMMs, and the CPU flavours of attention
# (the capture runs on the CPU; the GPU would run the flash kernels).
FLOP_ALIASES = {
    "addmm_": "addmm", "baddbmm_": "baddbmm", "_addmm_activation": "addmm",
    "_scaled_dot_product_flash_attention_for_cpu": "_scaled_dot_product_flash_attention",
    "_scaled_dot_product_flash_attention_for_cpu_backward": "_scaled_dot_product_flash_attention_backward",
}


def launches_kernel(func: Any) -> bool:
    if func.namespace in NO_KERNEL_NAMESPACES:
        return False
    if func._opname in NO_KERNEL:
        return False
    return not getattr(func, "is_view", False)


def span_bytes(tensor: torch.Tensor) -> int:
    """Bytes of memory a tensor spans (each element once, stride-0 dimensions once)."""
    if tensor.numel() == 0:
        return 0
    span = 1 + sum((size - 1) * abs(stride) for size, stride in zip(tensor.shape, tensor.stride(), strict=True))
    return min(span, tensor.numel()) * tensor.element_size()


def _tensor_bytes(value: Any) -> int:
    return sum(span_bytes(t) for t in tree_leaves(value) if isinstance(t, torch.Tensor))


def traffic_bytes(func: Any, args: Any, kwargs: Any, out: Any) -> tuple[int, int]:
    """(bytes read, bytes written) of one op."""
    name = func._opname
    if name in OVERWRITE_OPS and args:
        args = args[1:]
    written = _tensor_bytes(out)
    if name in GATHER_OPS and args:  # the selected rows (as many as the output) and the indices
        selected = args[1:] if name != "embedding" else args[1:2]
        return _tensor_bytes((selected, kwargs)) + written, written
    if name in SCATTER_INPLACE_OPS and args:  # indices and values read, the values' worth written
        values = _tensor_bytes((args[1:], kwargs))
        return values, min(values, written)
    return _tensor_bytes((args, kwargs)), written


def op_flop(func: Any, args: Any, kwargs: Any, out: Any) -> float:
    formula = flop_registry.get(func._overloadpacket)
    if formula is None and func.namespace == "aten" and func._opname in FLOP_ALIASES:
        formula = flop_registry.get(getattr(torch.ops.aten, FLOP_ALIASES[func._opname]))
    if formula is None:
        return 0.0
    return float(formula(*args, **kwargs, out_val=out))


def gemm_shape(func: Any, args: Any) -> tuple[int, int, int, int]:
    """(m, n, k, batch) of a matrix multiply, or zeros for any other op."""
    name = func._opname
    if name not in MATMUL_OPS:
        return 0, 0, 0, 0
    with_input = ("addmm", "addmm_", "baddbmm", "baddbmm_", "_addmm_activation")
    first, second = (args[1], args[2]) if name in with_input else (args[0], args[1])
    if first.dim() == 3:
        return int(first.shape[1]), int(second.shape[2]), int(first.shape[2]), int(first.shape[0])
    return int(first.shape[0]), int(second.shape[1]), int(first.shape[1]), 1


def first_dtype(args: Any, out: Any) -> str:
    for tensor in tree_leaves((out, args)):
        if isinstance(tensor, torch.Tensor) and tensor.is_floating_point():
            return str(tensor.dtype).removeprefix("torch.")
    for tensor in tree_leaves((out, args)):
        if isinstance(tensor, torch.Tensor):
            return str(tensor.dtype).removeprefix("torch.")
    return ""
