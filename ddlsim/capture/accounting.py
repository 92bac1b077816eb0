"""What one aten op moves: bytes read and written, tensor by tensor, and which ops launch a kernel.

- Bytes: every tensor argument read once and every tensor written once, each counted by the
  memory it spans (an expanded tensor of stride 0 reads its storage once). A tensor is written
  when the op returns it or mutates it (the schema's ``Tensor(a!)`` arguments: in-place ops,
  ``out=`` variants, ``_foreach_*_`` ops that return nothing). A mutated argument is read too,
  except by ops that only overwrite it (``fill_``, ``copy_``, random draws such as
  ``bernoulli_``, ``out=`` arguments). Gathers (``index``, ``embedding``, ...) read the rows they
  select, not their whole source; in-place scatters (``index_put_``, ``index_add_``, ...) read
  their indices and values and write as many bytes as the values. Factories that take a tensor
  as a template (``new_zeros``, ``zeros_like``, ...) read nothing. FSDP's all-gather copy-in
  reads the shards and writes this rank's slice of the all-gather buffer.
- Ops that launch no kernel (views, allocations, metadata queries, profiler markers) are not
  compute: `launches_kernel` is False for them and they are not recorded.
- FLOPs and kernel shapes are in `shapes.py`.
"""

from __future__ import annotations

from typing import Any

import torch
from torch.utils._pytree import tree_leaves

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
                           "geometric_", "log_normal_", "cauchy_", "copy_", "_foreach_copy_", "_foreach_zero_"})
# Ops that read only the rows they select (their output), not the whole source tensor.
GATHER_OPS = frozenset({"index", "index_select", "gather", "embedding", "take"})
# In-place ops that write only the selected rows of their destination (reading the values).
SCATTER_INPLACE_OPS = frozenset({"index_put_", "_index_put_impl_", "index_add_", "index_copy_", "scatter_",
                                 "scatter_add_", "scatter_reduce_", "masked_scatter_"})
# Ops that take a tensor only as a template for their output's shape and dtype: they read nothing.
TEMPLATE_OPS = frozenset({"new_zeros", "new_ones", "new_full", "zeros_like", "ones_like", "full_like", "rand_like",
                          "randn_like", "randint_like"})
WRITE_ONLY_ARGUMENTS = frozenset({"out"})
FUSED_OPTIMIZER_OPS = frozenset({"_fused_adam_", "_fused_adamw_", "_fused_sgd_", "_fused_adagrad_"})
COPY_IN_OPS = frozenset({"all_gather_copy_in"})  # fsdp: shards -> this rank's slice of the all-gather buffer
Traffic = list[tuple[torch.Tensor, int]]
_MUTATED: dict[Any, tuple[tuple[int, str], ...]] = {}


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


def _tensors(value: Any) -> list[torch.Tensor]:
    return [leaf for leaf in tree_leaves(value) if isinstance(leaf, torch.Tensor)]


def mutated_arguments(func: Any) -> tuple[tuple[int, str], ...]:
    """(position, name) of the arguments `func` writes (``Tensor(a!)`` in its schema)."""
    found = _MUTATED.get(func)
    if found is None:
        found = _MUTATED[func] = tuple((index, arg.name) for index, arg in enumerate(func._schema.arguments)
                                       if arg.alias_info is not None and arg.alias_info.is_write)
    return found


def _mutated(func: Any, args: tuple, kwargs: dict) -> list[tuple[str, Any]]:
    values = []
    for index, name in mutated_arguments(func):
        value = kwargs.get(name) if name in kwargs else (args[index] if index < len(args) else None)
        if value is not None:
            values.append((name, value))
    if func._opname in FUSED_OPTIMIZER_OPS and kwargs.get("grad_scale") is None:
        values = [(name, value) for name, value in values if name != "grads"]  # unscaled in place only with a scale
    return values


def tensor_traffic(func: Any, args: tuple, kwargs: dict, out: Any) -> tuple[Traffic, Traffic]:
    """(reads, writes) of one op: (tensor, bytes) pairs (see the module docstring)."""
    name = func._opname
    mutated = _mutated(func, args, kwargs) if func._schema.is_mutable else []
    outputs = _tensors(out)
    if name in COPY_IN_OPS:
        inputs = _tensors(args[0])
        return [(t, span_bytes(t)) for t in inputs], [(outputs[0], sum(span_bytes(t) for t in inputs))]
    written = list(outputs)
    for _, value in mutated:
        written.extend(t for t in _tensors(value) if not any(t is o for o in outputs))
    writes = [(t, span_bytes(t)) for t in written]
    if name in TEMPLATE_OPS:
        return [], writes
    skip = {id(t) for arg, value in mutated if arg in WRITE_ONLY_ARGUMENTS for t in _tensors(value)}
    if name in OVERWRITE_OPS and args:
        skip.update(id(t) for t in _tensors(args[0]))
    if name in GATHER_OPS and args:  # the selected rows (as many as the output) and the indices
        selected = args[1:] if name != "embedding" else args[1:2]
        source = _tensors(args[0])
        reads = [(t, span_bytes(t)) for t in _tensors((selected, kwargs))]
        if source:
            reads.insert(0, (source[0], sum(size for _, size in writes)))
        return reads, writes
    if name in SCATTER_INPLACE_OPS and args:  # indices and values read, the values' worth written
        reads = [(t, span_bytes(t)) for t in _tensors((args[1:], kwargs))]
        values = sum(size for _, size in reads)
        return reads, [(t, min(values, size)) for t, size in writes]
    reads = [(t, span_bytes(t)) for t in _tensors((args, kwargs)) if id(t) not in skip]
    return reads, writes


def traffic_bytes(func: Any, args: Any, kwargs: Any, out: Any) -> tuple[int, int]:
    """(bytes read, bytes written) of one op."""
    reads, writes = tensor_traffic(func, args, kwargs, out)
    return sum(size for _, size in reads), sum(size for _, size in writes)


def first_dtype(args: Any, out: Any) -> str:
    for tensor in tree_leaves((out, args)):
        if isinstance(tensor, torch.Tensor) and tensor.is_floating_point():
            return str(tensor.dtype).removeprefix("torch.")
    for tensor in tree_leaves((out, args)):
        if isinstance(tensor, torch.Tensor):
            return str(tensor.dtype).removeprefix("torch.")
    return ""
