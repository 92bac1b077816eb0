"""Per-iteration framework work that the analytic kernel lists leave out.

The decoder kernel lists already hold Adam at its memory traffic (28 bytes per parameter) and the
gradient-norm pass (`ddlsim.workload.kernels.megatron`), and the gradient-norm and found-inf
all-reduces are collectives of the iteration. Megatron-LM also, every iteration:

- zeroes the gradient buffer before the first backward (`zero_grad_buffer`: one write of the
  rank's gradients, or of its ZeRO shard from stage 2 on);
- with fp16 loss scaling, unscales the fp32 main gradients it steps (all of them, or its ZeRO
  shard from stage 1 on) and checks them for inf and NaN (`_unscale_main_grads_and_check_for_nan`:
  one read and one write of 4 bytes per parameter);
- clips those gradients to their norm (`clip_grad_norm_fp32`: one read and one write of 4 bytes
  per parameter);
- copies each micro-batch's tokens and labels (int64) from host to device (`get_batch`), at the
  PCIe bandwidth of the datasheet, one direction.

Memory traffic streams at the kernel roofline's streaming fraction of the datasheet bandwidth
(`ddlsim.compute.kernel_tables.STREAMING_MEMORY`). PCIe: NVIDIA A100 datasheet (PCIe Gen4,
64 GB/s both directions), H100 SXM datasheet (PCIe Gen5, 128 GB/s both directions).
"""

from __future__ import annotations

from typing import Any

from ddlsim.compute.kernel_tables import STREAMING_MEMORY

MAIN_GRAD_BYTES = 4
TOKEN_BYTES = 8  # int64 token ids; labels the same
PCIE_ONE_WAY_BYTES_PER_S = {"a100_40gb": 32e9, "a100_80gb": 32e9, "h100_sxm": 64e9, "h200": 64e9}


def framework_s(plan: dict[str, Any], device: Any) -> float:
    """The work above for a decoder plan (``params_per_gpu``, ``zero_stage``, ``dp_degree``,
    ``precision``, ``micro_batches``, ``micro_batch``, ``seq_len``) on `device`; 0 for plans that
    do not say their parameters (captures record this work as ops)."""
    params = int(plan.get("params_per_gpu", 0) or 0)
    bandwidth = getattr(device, "memory_bandwidth_bytes_per_s", 0.0) * STREAMING_MEMORY
    if params <= 0 or bandwidth <= 0:
        return 0.0
    zero, dp = int(plan.get("zero_stage", 0) or 0), int(plan.get("dp_degree", 1) or 1)
    buffer = params / dp if zero >= 2 else params  # the gradients this rank keeps
    stepped = params / dp if zero >= 1 else params  # the main gradients its optimizer steps
    traffic = buffer * MAIN_GRAD_BYTES  # zero the gradient buffer
    traffic += 2 * MAIN_GRAD_BYTES * stepped  # clip: read and scale the main gradients
    if plan.get("precision") == "fp16":
        traffic += 2 * MAIN_GRAD_BYTES * stepped  # unscale and check for inf / NaN
    seconds = traffic / bandwidth
    pcie = PCIE_ONE_WAY_BYTES_PER_S.get(getattr(device, "name", ""), 0.0)
    tokens = int(plan.get("micro_batches", 1) or 1) * int(plan.get("micro_batch", 1) or 1) * \
        int(plan.get("seq_len", 0) or 0)
    if pcie > 0:
        seconds += 2 * TOKEN_BYTES * tokens / pcie
    return seconds
