"""Published kernel throughput per device: what the kernel roofline's constants default to.

Every number here is read from a public measurement, cited beside it; none is fitted to a
validation row (docs/compute.md, "Kernel classes": "Constants and their sources").

GEMM: the maximum achievable matmul FLOP/s (MAMF) of large bf16 GEMMs over the dense tensor-core
peak, from Stas Bekman's "Machine Learning Engineering Open Book", compute/accelerator, "Maximum
Achievable Matmul FLOPS comparison table" (measured with its mamf-finder.py; A100 SXM 267.9 of
312 TFLOP/s, CUDA 12.1; H100 SXM 792.1 of 989 TFLOP/s, CUDA 12.1; the later edition lists
H100/H200 SXM at 794.5). Smaller GEMMs lose to tile and wave quantisation
(`kernel_roofline.gemm_utilisation`) on the device's SM count (A100 108, H100/H200 132: NVIDIA
A100 and H100 whitepapers).

Flash attention: achieved TFLOP/s by head dimension and sequence length (batch x sequence =
16k tokens, 2,048 hidden), FLOPs counted as the kernels count them (forward 4 s_q s_k d per
head, halved under a causal mask; backward 2.5 x forward):

- H100 SXM5 (and H200, same SMs and clocks): FlashAttention-3, Shah et al. 2024, "FlashAttention-3:
  Fast and Accurate Attention with Asynchrony and Low-precision", Figures 5 (forward, fp16/bf16,
  causal and not) and 6 (backward, not causal). The paper has no causal backward figure: causal
  backward is the non-causal backward scaled by the forward's causal / non-causal ratio at the
  same length (an assumption, stated in docs/compute.md).
- A100 SXM4: FlashAttention-2, Dao 2023, "FlashAttention-2: Faster Attention with Better
  Parallelism and Work Partitioning", Sec. 4.1: up to 73 % of the 312 TFLOP/s peak forward and
  63 % backward at long sequences. Its dependence on sequence length and the causal mask is
  taken from the FlashAttention-2 bars of the FlashAttention-3 paper's H100 figures (the same
  kernel), normalised to their long-sequence plateau.
"""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass

from ddlsim.core.work import KernelClass

FLASH_SEQ_LENS: tuple[int, ...] = (512, 1024, 2048, 4096, 8192, 16384)

# FlashAttention-3 on H100 SXM5, fp16/bf16, TFLOP/s at FLASH_SEQ_LENS (Shah et al. 2024, Fig. 5, 6).
_FA3_FORWARD = {False: {64: (333, 392, 460, 476, 496, 497), 128: (467, 565, 625, 638, 646, 648)},
                True: {64: (197, 265, 371, 420, 460, 473), 128: (292, 423, 521, 579, 602, 616)}}
_FA3_BACKWARD = {False: {64: (272, 363, 422, 453, 472, 474), 128: (316, 424, 501, 542, 559, 561)}}
H100_DENSE_16BIT_FLOP_PER_S = 989.4e12

# FlashAttention-2 (head dim 128) on H100 SXM5 in the same figures: the shape of its curve.
_FA2_FORWARD_SHAPE = {False: (309, 350, 362, 368, 370, 370), True: (191, 260, 298, 319, 333, 335)}
_FA2_BACKWARD_SHAPE = {False: (214, 260, 291, 310, 318, 322)}
A100_FA2_FORWARD_PLATEAU = 0.73  # Dao 2023, Sec. 4.1: forward up to 73 % of the A100's peak
A100_FA2_BACKWARD_PLATEAU = 0.63  # ... and backward up to 63 %


@dataclass(frozen=True)
class FlashTable:
    """Fractions of the 16-bit dense peak a flash-attention kernel reaches, by direction, causal
    mask, head dimension and sequence length (log-linear between the measured lengths and head
    dimensions, flat beyond them)."""

    name: str
    forward: dict[bool, dict[int, tuple[float, ...]]]
    backward: dict[bool, dict[int, tuple[float, ...]]]

    def fraction(self, kernel_class: KernelClass, head_dim: int, seq_len: int, causal: bool) -> float:
        table = self.forward if kernel_class is KernelClass.ATTENTION_FORWARD else self.backward
        if causal not in table:  # no causal backward measurement: scale by the forward's causal ratio
            ratio = self.fraction(KernelClass.ATTENTION_FORWARD, head_dim, seq_len, True) / \
                self.fraction(KernelClass.ATTENTION_FORWARD, head_dim, seq_len, False)
            return ratio * self.fraction(kernel_class, head_dim, seq_len, not causal)
        by_dim = table[causal]
        return _interpolate(sorted(by_dim), [_along_seq(by_dim[d], seq_len) for d in sorted(by_dim)], head_dim)


def _interpolate(points: list[int], values: list[float], at: float) -> float:
    """Log-linear interpolation of `values` at `points`, flat outside them."""
    if at <= points[0]:
        return values[0]
    if at >= points[-1]:
        return values[-1]
    right = bisect.bisect_right(points, at)
    left = right - 1
    weight = (math.log(at) - math.log(points[left])) / (math.log(points[right]) - math.log(points[left]))
    return values[left] + weight * (values[right] - values[left])


def _along_seq(values: tuple[float, ...], seq_len: int) -> float:
    return _interpolate(list(FLASH_SEQ_LENS), list(values), max(seq_len, 1))


def _fractions(table: dict[bool, dict[int, tuple[float, ...]]], peak_flop_per_s: float
               ) -> dict[bool, dict[int, tuple[float, ...]]]:
    return {causal: {dim: tuple(tflops * 1e12 / peak_flop_per_s for tflops in values) for dim, values in by_dim.items()}
            for causal, by_dim in table.items()}


def _fa2_on_a100(shape: dict[bool, tuple[float, ...]], plateau: float) -> dict[bool, dict[int, tuple[float, ...]]]:
    top = max(shape[False])
    return {causal: {128: tuple(plateau * value / top for value in values)} for causal, values in shape.items()}


FLASH_TABLES: dict[str, FlashTable] = {
    "fa3_h100": FlashTable("fa3_h100", _fractions(_FA3_FORWARD, H100_DENSE_16BIT_FLOP_PER_S),
                           _fractions(_FA3_BACKWARD, H100_DENSE_16BIT_FLOP_PER_S)),
    "fa2_a100": FlashTable("fa2_a100", _fa2_on_a100(_FA2_FORWARD_SHAPE, A100_FA2_FORWARD_PLATEAU),
                           _fa2_on_a100(_FA2_BACKWARD_SHAPE, A100_FA2_BACKWARD_PLATEAU)),
}


@dataclass(frozen=True)
class KernelSheet:
    """One device's published kernel constants (module docstring)."""

    gemm: float
    memory: float
    sm_count: int
    l2_ridge_flop_per_byte: float
    attention: str
    source: str


A100_MAMF = 267.9e12 / 312e12
H100_MAMF = 792.1e12 / 989e12
# Streaming kernels: no public per-kernel benchmark is used; 0.8 of the datasheet bandwidth is
# the assumption docs/compute.md states (typical HBM GPUs reach 80-90 % on streaming copies).
STREAMING_MEMORY = 0.8
# The tile rule (kernel_roofline.gemm_utilisation): tiles whose operand intensity is below the
# ridge lose in proportion. A100: 312 TFLOP/s over about 5 TB/s of L2 (64, the 128 x 128 tile);
# H100: the ridge of its largest tile, 128 x 256 (85.3 FLOP per byte), since MAMF was measured
# at shapes that tile fills and no public L2-bandwidth figure of the SXM part is used.
A100_RIDGE = 64.0
H100_RIDGE = 128 * 256 / (128 + 256)

KERNEL_SHEETS: dict[str, KernelSheet] = {
    "a100_40gb": KernelSheet(A100_MAMF, STREAMING_MEMORY, 108, A100_RIDGE, "fa2_a100",
                             "MAMF 267.9/312 (ML Engineering book); FlashAttention-2 (Dao 2023)"),
    "a100_80gb": KernelSheet(A100_MAMF, STREAMING_MEMORY, 108, A100_RIDGE, "fa2_a100",
                             "MAMF 267.9/312 (ML Engineering book); FlashAttention-2 (Dao 2023)"),
    "h100_sxm": KernelSheet(H100_MAMF, STREAMING_MEMORY, 132, H100_RIDGE, "fa3_h100",
                            "MAMF 792.1/989 (ML Engineering book); FlashAttention-3 (Shah et al. 2024)"),
    "h200": KernelSheet(H100_MAMF, STREAMING_MEMORY, 132, H100_RIDGE, "fa3_h100",
                        "H100's compute (same GH100 SMs and clocks): MAMF 792.1/989; FlashAttention-3"),
    "cpu": KernelSheet(0.5, 0.7, 0, A100_RIDGE, "none", "placeholder: profile the CPU instead"),
}
