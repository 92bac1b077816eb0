"""What a captured op computes: its FLOPs and the kernel shape the kernel roofline prices it by.

- FLOPs come from `torch.utils.flop_counter`'s registry (matrix multiplies, attention,
  convolutions and their backward ops), with in-place GEMMs and the CPU flavours of flash
  attention counted as their GPU counterparts. Two kinds of kernel count differently:
- **attention** (the SDPA flash, efficient and cuDNN ops, their CPU flavours and the low-level
  ``_flash_attention_*`` / ``_efficient_attention_*``): with a causal mask (``is_causal``, or
  ``custom_mask_type`` 1 or 2) the kernel skips the masked tiles, so the FLOPs are torch's full
  count times the unmasked fraction (one half for a square causal mask), as the FlashAttention
  papers count them; backward is torch's count, 2.5 x forward. An explicit ``attn_mask`` makes
  the kernel do the full work, and it is counted in full. The shape goes in the GEMM columns:
  ``gemm_m`` = query length, ``gemm_n`` = key length, ``gemm_k`` = head dimension,
  ``gemm_batch`` = batch x query heads;
- **grouped GEMM** (``aten._grouped_mm``, ``aten._scaled_grouped_mm``; no flop-counter entry):
  2 x rows x n x k over the groups, for the operand layouts of the op's schema (``offs`` gives
  the groups' ends along the ragged dimension; its values are not read, every row counts):
  2-D x 3-D (tokens x k against groups x k x n: the experts' forward and input gradient),
  3-D x 2-D, 2-D x 2-D (the ragged dimension is k: the weight gradient, one m x n output per
  group) and 3-D x 3-D (a plain batch). The shape: ``gemm_batch`` = groups, ``gemm_m`` the rows
  of one group on average, ``gemm_n`` and ``gemm_k`` those of one group's GEMM.
- Matrix multiplies keep their (m, n, k, batch) for tile and wave quantisation.
"""

from __future__ import annotations

from typing import Any

import torch
from torch.utils.flop_counter import flop_registry

MATMUL_OPS = frozenset({"mm", "addmm", "addmm_", "bmm", "baddbmm", "baddbmm_", "_addmm_activation"})
GROUPED_MM_OPS = frozenset({"_grouped_mm", "_scaled_grouped_mm"})
FLOP_ALIASES = {
    "addmm_": "addmm", "baddbmm_": "baddbmm", "_addmm_activation": "addmm",
    "_scaled_dot_product_flash_attention_for_cpu": "_scaled_dot_product_flash_attention",
    "_scaled_dot_product_flash_attention_for_cpu_backward": "_scaled_dot_product_flash_attention_backward",
}
# Attention ops -> True where the tensors are (batch, heads, sequence, dim), False for (batch, sequence, heads, dim).
ATTENTION_LAYOUTS = {
    "_scaled_dot_product_flash_attention": True, "_scaled_dot_product_flash_attention_backward": True,
    "_scaled_dot_product_efficient_attention": True, "_scaled_dot_product_efficient_attention_backward": True,
    "_scaled_dot_product_cudnn_attention": True, "_scaled_dot_product_cudnn_attention_backward": True,
    "_scaled_dot_product_flash_attention_for_cpu": True, "_scaled_dot_product_flash_attention_for_cpu_backward": True,
    "_flash_attention_forward": False, "_flash_attention_backward": False,
    "_efficient_attention_forward": False, "_efficient_attention_backward": False,
}
MASK_ARGUMENTS = ("attn_mask", "attn_bias", "bias")

_POSITIONS: dict[Any, dict[str, int]] = {}


def argument(func: Any, args: tuple, kwargs: dict, name: str, default: Any = None) -> Any:
    """The argument `name` of a call of `func`, by its schema (positional or keyword)."""
    positions = _POSITIONS.get(func)
    if positions is None:
        positions = _POSITIONS[func] = {arg.name: index for index, arg in enumerate(func._schema.arguments)}
    if name in kwargs:
        return kwargs[name]
    index = positions.get(name)
    return args[index] if index is not None and index < len(args) else default


def causal_fraction(s_q: int, s_k: int) -> float:
    """The unmasked fraction of an s_q x s_k causal (top-left aligned) score matrix, as a
    flash kernel that skips masked tiles does it: one half when square."""
    if s_q <= s_k:
        return s_q / (2 * s_k)
    return 1 - s_k / (2 * s_q)


def attention_shape(func: Any, args: tuple, kwargs: dict) -> tuple[int, int, int, int, bool] | None:
    """(s_q, s_k, head dim, batch x heads, causal) of an attention op, None for other ops or a
    ragged (variable-length) call."""
    heads_first = ATTENTION_LAYOUTS.get(func._opname)
    if heads_first is None:
        return None
    query, key = argument(func, args, kwargs, "query"), argument(func, args, kwargs, "key")
    if not isinstance(query, torch.Tensor) or not isinstance(key, torch.Tensor) or query.dim() != 4:
        return None
    if heads_first:
        batch, heads, s_q, dim = query.shape
        s_k = key.shape[2]
    else:
        batch, s_q, heads, dim = query.shape
        s_k = key.shape[1]
    causal = bool(argument(func, args, kwargs, "is_causal", False)) or \
        argument(func, args, kwargs, "custom_mask_type", 0) in (1, 2)
    masks = (argument(func, args, kwargs, name) for name in MASK_ARGUMENTS)
    if any(isinstance(mask, torch.Tensor) and mask.numel() > 0 for mask in masks):
        causal = False  # an explicit mask: the kernel computes every tile
    return int(s_q), int(s_k), int(dim), int(batch * heads), causal


def grouped_mm_shape(func: Any, args: tuple, kwargs: dict) -> tuple[float, int, int, int, int]:
    """(FLOPs, m, n, k, groups) of a grouped GEMM (module docstring)."""
    first, second = args[0], args[1]
    offs = argument(func, args, kwargs, "offs")
    if first.dim() == 2 and second.dim() == 3:
        groups, rows, k, n = second.shape[0], first.shape[0], first.shape[1], second.shape[2]
        return 2.0 * rows * k * n, max(1, round(rows / groups)), n, k, groups
    if first.dim() == 3 and second.dim() == 2:
        groups, m, k, columns = first.shape[0], first.shape[1], first.shape[2], second.shape[1]
        return 2.0 * m * k * columns, m, max(1, round(columns / groups)), k, groups
    if first.dim() == 2 and second.dim() == 2:
        groups = offs.shape[0] if isinstance(offs, torch.Tensor) else 1
        m, depth, n = first.shape[0], first.shape[1], second.shape[1]
        return 2.0 * m * n * depth, m, n, max(1, round(depth / groups)), groups
    groups, m, k, n = first.shape[0], first.shape[1], first.shape[2], second.shape[2]
    return 2.0 * groups * m * n * k, m, n, k, groups


def op_flop(func: Any, args: tuple, kwargs: dict, out: Any) -> float:
    """FLOPs of one op (module docstring); 0 for ops the flop counter does not count."""
    name = func._opname
    if name in GROUPED_MM_OPS:
        return grouped_mm_shape(func, args, kwargs)[0]
    formula = flop_registry.get(func._overloadpacket)
    if formula is None and func.namespace == "aten" and name in FLOP_ALIASES:
        formula = flop_registry.get(getattr(torch.ops.aten, FLOP_ALIASES[name]))
    if formula is None:
        return 0.0
    flop = float(formula(*args, **kwargs, out_val=out))
    attention = attention_shape(func, args, kwargs)
    if attention is not None and attention[4]:
        flop *= causal_fraction(attention[0], attention[1])
    return flop


def kernel_shape(func: Any, args: tuple, kwargs: dict) -> tuple[int, int, int, int]:
    """(m, n, k, batch) of a GEMM, grouped GEMM or attention op (module docstring); zeros otherwise."""
    name = func._opname
    if name in MATMUL_OPS:
        with_input = ("addmm", "addmm_", "baddbmm", "baddbmm_", "_addmm_activation")
        first, second = (args[1], args[2]) if name in with_input else (args[0], args[1])
        if first.dim() == 3:
            return int(first.shape[1]), int(second.shape[2]), int(first.shape[2]), int(first.shape[0])
        return int(first.shape[0]), int(second.shape[1]), int(first.shape[1]), 1
    if name in GROUPED_MM_OPS:
        _, m, n, k, groups = grouped_mm_shape(func, args, kwargs)
        return int(m), int(n), int(k), int(groups)
    attention = attention_shape(func, args, kwargs)
    if attention is not None:
        return attention[:4]
    return 0, 0, 0, 0
