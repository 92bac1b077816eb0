"""FSDP2's copy kernels around its ZeRO-3 collectives (``torch.distributed.fsdp.fully_shard``).

FSDP2 does not all-gather into the parameters, nor reduce-scatter out of the gradients: it
copies through flat communication buffers (PyTorch, `torch/distributed/fsdp/_fully_shard/
_fsdp_collectives.py`, ``foreach_all_gather``, ``foreach_all_gather_copy_out`` and
``foreach_reduce``; docs: https://docs.pytorch.org/docs/stable/distributed.fsdp.fully_shard.html).
For one unit (a ``fully_shard``-wrapped module) of P parameters sharded over W ranks, with A
bytes per parameter element and G per gradient element of the reduction:

``fsdp_gather_copies`` (with each parameter all-gather)
    ``all_gather_copy_in``: the rank's shards (P / W elements) copied into its slice of the
    all-gather input, 2 A P / W bytes; ``split_with_sizes_copy`` (the copy-out): the all-gather
    output (P elements) copied into the unsharded parameters, 2 A P bytes.
``fsdp_reduce_copies`` (before each gradient reduce-scatter)
    ``chunk_cat`` (the copy-in): the unsharded gradients (P elements of A bytes, as backward
    wrote them) copied, each split into its W rank chunks, into the reduce-scatter input
    (P elements of G bytes), (A + G) P bytes.

Each is one kernel (the CUDA ``split_with_sizes_copy`` and ``_chunk_cat`` are single launches;
the copy-in a multi-tensor ``_foreach_copy_``), memory-bound, priced by the kernel roofline as any
other. After the reduce-scatter FSDP2 only views the output as the sharded gradients (NCCL's
average needs no divide kernel), so nothing is copied there. FSDP2 runs the all-gather copy-in on
its own stream ahead of the gather; the list charges it with the copy-out, where the unit's
compute waits (its bytes are 1 / W of the copy-out's).
"""

from __future__ import annotations

import math

from ddlsim.compute.kernel_registry import register_kernels, shape_value
from ddlsim.core.types import Phase
from ddlsim.core.work import Kernel, ShardSignature
from ddlsim.workload.kernels.primitives import memory

GATHER_KIND = "fsdp_gather_copies"
REDUCE_KIND = "fsdp_reduce_copies"


@register_kernels(GATHER_KIND)
def gather_copies(signature: ShardSignature, phase: Phase) -> list[Kernel]:
    """Copy-in and copy-out of one parameter all-gather of `params` elements over `shards` ranks."""
    params, shards = shape_value(signature, "params"), shape_value(signature, "shards")
    element = signature.precision.bytes_per_element
    return [memory("fsdp_all_gather_copy_in", 2 * element * math.ceil(params / shards)),
            memory("fsdp_all_gather_copy_out", 2 * element * params)]


@register_kernels(REDUCE_KIND)
def reduce_copies(signature: ShardSignature, phase: Phase) -> list[Kernel]:
    """Copy-in of one gradient reduce-scatter of `params` elements reduced in `reduce_bytes` each."""
    params, reduce_bytes = shape_value(signature, "params"), shape_value(signature, "reduce_bytes")
    return [memory("fsdp_reduce_scatter_copy_in", (signature.precision.bytes_per_element + reduce_bytes) * params)]
