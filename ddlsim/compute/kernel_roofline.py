"""The kernel roofline: the ONE pricing path of compute, kernel by kernel, for both front doors.

A compute task is a list of `ddlsim.core.work.Kernel`s: the analytic models list them per signature
(`ddlsim.compute.kernel_registry`, which `ddlsim.workload.kernels` registers into), a capture maps
every recorded aten op onto one (`ddlsim.capture.pricing`). Both are priced here, by the kernel's class:

    GEMM, grouped GEMM   max(flop / (peak x e_gemm x u(m, n, batch)), bytes / (bandwidth x e_memory))
    flash attention      max(flop / (peak x e_attention(direction, head dim, sequence, causal)), bytes / ...)
    everything else      bytes / (bandwidth x e_memory)   (norms, activations, losses, optimizers, ...)

each plus ``device_s_per_kernel``; then for a task

    device_s = sum over kernels      host_s = launches x host_s_per_launch      time_s = max(device_s, host_s)

The constants default to the device's published figures (`kernel_tables.py`, with sources);
`compute=a100_megatron` replaces some with values fitted to measured runs (docs/validation.md).

- ``e_gemm``: the fraction of the tensor-core peak a GEMM reaches on full waves of large tiles.
- ``u(m, n, batch)``: tile and wave quantisation. The GEMM's m x n output (batch of them) is cut
  into tiles; the tiles run in waves of one tile per SM (`sm_count`, 108 on an A100), so a GEMM
  with 120 tiles takes two waves, the second nearly empty. u is the useful fraction of the
  waves' work, for the best of the tile shapes in `TILE_SHAPES` (as cuBLAS picks a kernel),
  times that tile's own efficiency: a tm x tn tile does 2 tm tn FLOP per (tm + tn) x 2 bytes it
  loads, so tiles below `l2_ridge_flop_per_byte` (peak over L2 bandwidth) are slowed in
  proportion. Memory-bound GEMMs (small k) are caught by the byte term.
- ``e_attention``: the fraction of the peak a flash-attention kernel reaches at that shape
  (FlashAttention-2/3 papers' measurements, `kernel_tables.FlashTable`); without a table,
  ``e_gemm``.
- ``e_memory``: the fraction of DRAM bandwidth element-wise and reduction kernels reach.
- ``host_s_per_launch``: CPU time the framework spends issuing one kernel (Python, autograd,
  dispatcher, launch). The host runs ahead of the GPU, so a task costs the larger of the two
  sums; small micro-batches are host-bound (see docs/validation.md).
- ``device_s_per_kernel``: GPU time between kernels (launch latency, ramp-up and tail).

Kinds without a kernel list fall back to the class roofline of `Roofline`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from ddlsim.compute.kernel_registry import has_kernels, kernels_for
from ddlsim.compute.kernel_tables import FlashTable
from ddlsim.compute.roofline import Roofline
from ddlsim.core.errors import ConfigError
from ddlsim.core.types import Phase, Precision
from ddlsim.core.work import ComputeTask, Kernel, ShardSignature

TILE_SHAPES: tuple[tuple[int, int], ...] = ((256, 128), (128, 256), (128, 128), (128, 64), (64, 128), (64, 64))
A100_SMS = 108
A100_L2_RIDGE_FLOP_PER_BYTE = 64.0  # 312 TFLOP/s over roughly 5 TB/s of L2 bandwidth


@dataclass(frozen=True)
class KernelEfficiency:
    """The kernel model's constants (module docstring); fitted per device and software stack."""

    gemm: float = 0.8
    memory: float = 0.8
    host_s_per_launch: float = 0.0
    device_s_per_kernel: float = 0.0
    sm_count: int = A100_SMS
    l2_ridge_flop_per_byte: float = A100_L2_RIDGE_FLOP_PER_BYTE
    attention: FlashTable | None = None

    def __post_init__(self) -> None:
        for key in ("gemm", "memory"):
            value = getattr(self, key)
            if not 0 < value <= 1:
                raise ConfigError(key, value, "an efficiency must be in (0, 1]")
        for key in ("host_s_per_launch", "device_s_per_kernel"):
            value = getattr(self, key)
            if not (math.isfinite(value) and value >= 0):
                raise ConfigError(key, value, "must be finite and >= 0")
        if not isinstance(self.sm_count, int) or self.sm_count < 0:
            raise ConfigError("sm_count", self.sm_count, "must be an integer >= 0 (0: no wave quantisation)")
        if not self.l2_ridge_flop_per_byte > 0:
            raise ConfigError("l2_ridge_flop_per_byte", self.l2_ridge_flop_per_byte, "must be positive")


def gemm_utilisation(m: int, n: int, batch: int, sm_count: int = A100_SMS,
                     l2_ridge: float = A100_L2_RIDGE_FLOP_PER_BYTE) -> float:
    """Best useful fraction of the tensor cores over `TILE_SHAPES` (tile and wave quantisation);
    1 with `sm_count` 0 (a device without SM waves, such as a CPU)."""
    if sm_count == 0:
        return 1.0
    best = 0.0
    for tm, tn in TILE_SHAPES:
        tiles = math.ceil(m / tm) * math.ceil(n / tn) * batch
        waves = math.ceil(tiles / sm_count)
        useful = (m * n * batch) / (waves * sm_count * tm * tn)
        intensity = tm * tn / (tm + tn)  # FLOP per byte of fp16 operands loaded per k step
        best = max(best, useful * min(1.0, intensity / l2_ridge))
    return best


def kernel_time_s(kernel: Kernel, peak_flop_per_s: float, bandwidth_bytes_per_s: float,
                  efficiency: KernelEfficiency) -> float:
    """Device time of one kernel (without the host); 0 for a host-only entry."""
    if not kernel.on_device:
        return 0.0
    compute = 0.0
    if kernel.flop:
        compute = kernel.flop / (peak_flop_per_s * compute_fraction(kernel, efficiency))
    memory = kernel.bytes / (bandwidth_bytes_per_s * efficiency.memory)
    return max(compute, memory) + efficiency.device_s_per_kernel


def compute_fraction(kernel: Kernel, efficiency: KernelEfficiency) -> float:
    """The fraction of the peak FLOP/s `kernel` reaches when compute-bound (module docstring)."""
    kernel_class = kernel.kernel_class
    if kernel_class.is_gemm:
        return efficiency.gemm * gemm_utilisation(kernel.m, kernel.n, kernel.batch, efficiency.sm_count,
                                                  efficiency.l2_ridge_flop_per_byte)
    if kernel_class.is_attention and efficiency.attention is not None:
        return efficiency.attention.fraction(kernel_class, kernel.k, kernel.n, kernel.causal)
    return efficiency.gemm


def kernels_time_s(kernels: Sequence[Kernel], peak_flop_per_s: float, bandwidth_bytes_per_s: float,
                   efficiency: KernelEfficiency) -> tuple[float, float]:
    """(device seconds, host seconds) of a kernel sequence."""
    device = sum(kernel_time_s(kernel, peak_flop_per_s, bandwidth_bytes_per_s, efficiency) for kernel in kernels)
    host = efficiency.host_s_per_launch * sum(kernel.launches for kernel in kernels)
    return device, host


@dataclass(frozen=True)
class KernelRoofline(Roofline):
    """`Roofline` whose tasks with a kernel list are priced kernel by kernel (module docstring)."""

    kernel: KernelEfficiency = field(default_factory=KernelEfficiency)

    def signature_time_s(self, signature: ShardSignature, phase: Phase | str) -> float | None:
        """Time of one task of `signature` in `phase`, or None when the kind has no kernel list."""
        if not has_kernels(signature.model_kind):
            return None
        kernels = kernels_for(signature, phase)
        peak = self.device.peak(Precision(signature.precision))
        device, host = kernels_time_s(kernels, peak, self.device.memory_bandwidth_bytes_per_s, self.kernel)
        return max(device, host)

    def task_time_s(self, task: ComputeTask) -> float:
        time_s = self.signature_time_s(task.signature, task.phase)
        return super().task_time_s(task) if time_s is None else time_s

    def shape_time_s(self, signature: ShardSignature, phase: Phase | str, flop: float, memory_bytes: float) -> float:
        time_s = self.signature_time_s(signature, phase)
        return super().shape_time_s(signature, phase, flop, memory_bytes) if time_s is None else time_s
