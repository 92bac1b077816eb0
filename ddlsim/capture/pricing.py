"""Compute prices for captured ops: `ddlsim.compute`'s models applied op by op.

A *segment* is a run of compute ops on one stream between synchronisation points (a collective
that needs its result, an event another stream waits on); it becomes one compute task of the
iteration graph. Its time, by the compute model it is given:

- kernel roofline (the default; ``compute.kernels.*``): every op becomes a `ddlsim.core.work.Kernel`
  of its class (`kernel_of`: a GEMM with its (m, n, k, batch) tile quantisation, flash
  attention, memory-bound work of its bytes), with one host launch each, priced by the same
  code as the analytic models' kernel lists (`ddlsim.compute.kernel_roofline`); the segment
  takes max(sum of device times, sum of host times), as a task does. The host also issues the collectives: each
  costs one launch, charged to the next segment of its rank's compute stream (as the kernel
  lists of `model=gpt` count a layer's collective calls);
- roofline: every op priced alone by `Roofline.time_s` (matrix multiplies, attention and
  convolutions with the ``gemm`` efficiencies, other ops with ``elementwise``), summed;
- measured: op times measured by replaying the rank's ops on a device (`replay.py`), summed;
  ops without a measurement fall back to the roofline and the source says so.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ddlsim.compute.kernel_roofline import KernelRoofline, kernel_time_s
from ddlsim.core.types import ComputeEstimate, ComputeSource, Precision
from ddlsim.core.work import Kernel, KernelClass

PRECISIONS = {"float16": Precision.FP16, "bfloat16": Precision.BF16, "float32": Precision.FP32,
              "float64": Precision.FP32, "float8_e4m3fn": Precision.FP8, "float8_e5m2": Precision.FP8}

# (op, flop, read_bytes, write_bytes, gemm_m, gemm_n, gemm_k, gemm_batch, dtype): what prices an op
OpKey = tuple[str, float, int, int, int, int, int, int, str]


ATTENTION_FORWARD_OPS = frozenset({"_scaled_dot_product_flash_attention", "_scaled_dot_product_efficient_attention",
                                   "_scaled_dot_product_cudnn_attention", "_flash_attention_forward",
                                   "_efficient_attention_forward", "_scaled_dot_product_flash_attention_for_cpu"})
ATTENTION_BACKWARD_OPS = frozenset({"_scaled_dot_product_flash_attention_backward",
                                    "_scaled_dot_product_efficient_attention_backward",
                                    "_scaled_dot_product_cudnn_attention_backward", "_flash_attention_backward",
                                    "_efficient_attention_backward",
                                    "_scaled_dot_product_flash_attention_for_cpu_backward"})
# A node that only knows how long it ran (a Chakra ET's COMP_NODE with duration_micros and no FLOPs or
# bytes, as Chakra's generator writes): its key carries the duration in seconds in the flop field.
TIMED_OP = "ddlsim.timed"
# A node that knows its FLOPs and bytes but not its kernel (a foreign Chakra COMP_NODE: num_ops,
# tensor_size): priced by the roofline of its work, GEMM efficiency when it has FLOPs.
WORK_OP = "ddlsim.work"
FUSED_MEMBER_OP = "ddlsim.fused_member"  # fusion.FUSED_MEMBER (pricing cannot import fusion: fusion imports it)
GROUPED_GEMM_OPS = frozenset({"_grouped_mm", "_scaled_grouped_mm"})
# Memory-bound ops by what they do (all priced by their bytes; the class names them in the tables).
CLASS_BY_OP = {
    "embedding": KernelClass.EMBEDDING, "embedding_dense_backward": KernelClass.EMBEDDING,
    **dict.fromkeys(("native_layer_norm", "native_layer_norm_backward", "_fused_rms_norm",
                     "_fused_rms_norm_backward", "rsqrt", "native_group_norm", "native_group_norm_backward",
                     "native_batch_norm", "native_batch_norm_backward", "_native_batch_norm_legit",
                     "_native_batch_norm_legit_functional"), KernelClass.NORM),
    **dict.fromkeys(("silu", "silu_backward", "gelu", "gelu_backward", "relu", "threshold_backward", "sigmoid",
                     "sigmoid_backward", "tanh", "tanh_backward", "_softmax", "_softmax_backward_data",
                     "native_dropout", "native_dropout_backward"), KernelClass.ACTIVATION),
    **dict.fromkeys(("_log_softmax", "_log_softmax_backward_data", "nll_loss_forward", "nll_loss_backward",
                     "nll_loss2d_forward", "nll_loss2d_backward"), KernelClass.LOSS),
}


def precision_of(dtype: str) -> Precision:
    return PRECISIONS.get(dtype, Precision.FP32)


def kernel_class_of(op: str, gemm_m: int) -> KernelClass:
    """The kernel class of a captured op (``aten.mm`` -> GEMM, flash attention, ...)."""
    name = op.rsplit(".", 1)[-1]
    if name in GROUPED_GEMM_OPS:
        return KernelClass.GROUPED_GEMM
    if name in ATTENTION_FORWARD_OPS:
        return KernelClass.ATTENTION_FORWARD
    if name in ATTENTION_BACKWARD_OPS:
        return KernelClass.ATTENTION_BACKWARD
    if gemm_m:
        return KernelClass.GEMM
    if name.startswith(("_foreach_", "_fused_adam", "_fused_sgd")):
        return KernelClass.OPTIMIZER
    return CLASS_BY_OP.get(name, KernelClass.ELEMENTWISE)


# Full (unmasked) attention FLOPs per (query, key, head dimension) triple: forward 2 GEMMs, backward 5.
ATTENTION_FLOP_PER_QKD = {KernelClass.ATTENTION_FORWARD: 4.0, KernelClass.ATTENTION_BACKWARD: 10.0}


def kernel_of(key: OpKey) -> Kernel:
    """The `Kernel` one captured op runs, from its op key.

    Attention keys carry (query length, key length, head dimension, batch x heads) in the GEMM
    columns (`shapes.py`); a causal kernel is recorded with the FLOPs it does, about half of the
    full count of its shape, and that is how its causal flag is read back here.
    """
    name, flop, read, written, m, n, k, batch, _ = key
    if name == FUSED_MEMBER_OP:  # folded into the fused record of its run (fusion.py): no kernel of its own
        return Kernel(name, launches=0, kernel_class=KernelClass.HOST)
    kernel_class = kernel_class_of(name, m)
    shaped = kernel_class.is_gemm or kernel_class.is_attention
    causal = False
    if kernel_class.is_attention and m and n and k:
        causal = flop < 0.75 * ATTENTION_FLOP_PER_QKD[kernel_class] * max(batch, 1) * m * n * k
    return Kernel(name, flop=flop, bytes=float(read + written), m=m if shaped else 0, n=n if shaped else 0,
                  k=k if shaped else 0, batch=max(batch, 1), kernel_class=kernel_class, causal=causal)


class SegmentPricer:
    """Prices segments of captured ops with a `ddlsim.compute.ComputeModel` (module docstring)."""

    def __init__(self, compute_model: Any, measured_s: Mapping[OpKey, float] | None = None) -> None:
        self.model = compute_model
        self.roofline = compute_model.roofline
        self.device_name = compute_model.device_name
        self.measured_s = dict(measured_s or {})
        self._ops: dict[OpKey, tuple[float, float]] = {}
        self._segments: dict[tuple[OpKey, ...], ComputeEstimate] = {}

    @property
    def kernel_level(self) -> bool:
        return isinstance(self.roofline, KernelRoofline)

    def _op_s(self, key: OpKey) -> tuple[float, float]:
        """(device seconds, host seconds) of one op."""
        cached = self._ops.get(key)
        if cached is not None:
            return cached
        _, flop, read, written, _, _, _, _, dtype = key
        precision = precision_of(dtype)
        if key[0] == TIMED_OP:
            result = (flop, self.host_launch_s())
        elif key[0] == WORK_OP:
            work = "gemm" if flop > 0 else "elementwise"
            result = (self.roofline.time_s(flop, read + written, precision, work), self.host_launch_s())
        elif self.kernel_level:
            efficiency = self.roofline.kernel
            kernel = kernel_of(key)
            device = kernel_time_s(kernel, self.roofline.device.peak(precision),
                                   self.roofline.device.memory_bandwidth_bytes_per_s, efficiency)
            result = (device, efficiency.host_s_per_launch * kernel.launches)
        elif key[0] == FUSED_MEMBER_OP:
            result = (0.0, 0.0)
        else:
            work = "gemm" if flop > 0 else "elementwise"
            result = (self.roofline.time_s(flop, read + written, precision, work), 0.0)
        self._ops[key] = result
        return result

    def host_launch_s(self) -> float:
        return self.roofline.kernel.host_s_per_launch if self.kernel_level else 0.0

    def price(self, keys: Sequence[OpKey], extra_launches: int = 0) -> ComputeEstimate:
        """The time of one segment of ops (plus `extra_launches` host-only launches)."""
        segment = (*keys, extra_launches)
        cached = self._segments.get(segment)
        if cached is not None:
            return cached
        if self.measured_s and all(key in self.measured_s for key in keys):
            estimate = ComputeEstimate(sum(self.measured_s[key] for key in keys), ComputeSource.MEASURED,
                                       self.device_name)
        else:
            device, host = 0.0, extra_launches * self.host_launch_s()
            for key in keys:
                op_device, op_host = self._op_s(key)
                device += op_device
                host += op_host
            estimate = ComputeEstimate(max(device, host), ComputeSource.ROOFLINE, self.device_name)
        self._segments[segment] = estimate
        return estimate
