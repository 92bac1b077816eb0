"""Print the kernel roofline's efficiency tables for a device, as docs/compute.md shows them.

    python scripts/compute_tables.py [--device h100_sxm]

1. GEMM: the fraction of the dense 16-bit peak the model gives the GEMMs of today's decoders
   (Llama 3 8B / 70B / 405B layer shapes, 8,192 tokens per micro-batch, tensor parallel 1 to 8):
   the device's published MAMF fraction times tile and wave quantisation, and the resulting
   TFLOP/s (compute-bound; the byte term of the roofline is checked too).
2. Flash attention: the fraction of the peak by sequence length, head dimension 128, forward and
   backward, causal or not, from the device's published table.
Every figure is computed from `ddlsim.compute` at run time; nothing here is typed in.
"""

from __future__ import annotations

import argparse

from ddlsim.compute.devices import DeviceConfig, DeviceSpec
from ddlsim.compute.kernel_roofline import compute_fraction, kernel_time_s
from ddlsim.compute.model import KernelModelConfig, kernel_efficiency
from ddlsim.core.work import Kernel, KernelClass
from ddlsim.workload.kernels.primitives import gemm

SHAPES = {"Llama 3 8B": (4096, 14336, 32, 8), "Llama 3 70B": (8192, 28672, 64, 8),
          "Llama 3 405B": (16384, 53248, 128, 8)}  # hidden, FFN, heads, KV heads
TOKENS = 8192
SEQ_LENS = (512, 2048, 8192, 32768, 131072)


def layer_gemms(hidden: int, ffn: int, heads: int, kv_heads: int, tp: int) -> list[tuple[str, Kernel]]:
    head_dim = hidden // heads
    qkv = (heads + 2 * kv_heads) * head_dim // tp
    return [("QKV", gemm("qkv", TOKENS, qkv, hidden)), ("attention out", gemm("out", TOKENS, hidden, hidden // tp)),
            ("MLP gate+up", gemm("up", TOKENS, 2 * ffn // tp, hidden)),
            ("MLP down", gemm("down", TOKENS, hidden, ffn // tp))]


def gemm_table(device: DeviceSpec) -> str:
    efficiency = kernel_efficiency(KernelModelConfig(), device)
    peak, bandwidth = device.peak("bf16"), device.memory_bandwidth_bytes_per_s
    lines = ["| model | TP | GEMM | m x n x k | fraction of peak | TFLOP/s |", "|---|---|---|---|---|---|"]
    for model, shape in SHAPES.items():
        for tp in (1, 8):
            for name, kernel in layer_gemms(*shape, tp):
                achieved = kernel.flop / kernel_time_s(kernel, peak, bandwidth, efficiency)
                lines.append(f"| {model} | {tp} | {name} | {kernel.m} x {kernel.n} x {kernel.k} | "
                             f"{achieved / peak:.3f} | {achieved / 1e12:.0f} |")
    return "\n".join(lines)


def attention_table(device: DeviceSpec) -> str:
    efficiency = kernel_efficiency(KernelModelConfig(), device)
    if efficiency.attention is None:
        return f"{device.name} has no flash-attention table."
    header = " | ".join(f"{length:,}" for length in SEQ_LENS)
    lines = [f"| kernel | {header} |", "|---|" + "---|" * len(SEQ_LENS)]
    for kernel_class in (KernelClass.ATTENTION_FORWARD, KernelClass.ATTENTION_BACKWARD):
        for causal in (False, True):
            cells = []
            for length in SEQ_LENS:
                kernel = Kernel("flash", flop=1.0, m=length, n=length, k=128, kernel_class=kernel_class, causal=causal)
                cells.append(f"{compute_fraction(kernel, efficiency):.3f}")
            name = f"{kernel_class.value.replace('attention_', '')}{', causal' if causal else ''}"
            lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="h100_sxm")
    args = parser.parse_args()
    device = DeviceSpec.from_config(DeviceConfig(name=args.device))
    efficiency = kernel_efficiency(KernelModelConfig(), device)
    print(f"{device.label}: dense bf16 peak {device.peak('bf16') / 1e12:.1f} TFLOP/s, MAMF fraction "
          f"{efficiency.gemm:.3f}, {efficiency.sm_count} SMs, memory {efficiency.memory:.2f} of "
          f"{device.memory_bandwidth_bytes_per_s / 1e9:,.0f} GB/s\n")
    print(f"GEMMs of one layer, {TOKENS:,} tokens:\n{gemm_table(device)}\n")
    print(f"Flash attention, head dimension 128, fraction of the peak by sequence length:\n{attention_table(device)}")


if __name__ == "__main__":
    main()
