"""Vendor datasheet figures of compute devices, shared by `compute/` (roofline of compute tasks)
and `network/` (roofline of the local reductions inside collectives).

Values are strings with units, parsed by `ddlsim.core.units` where they are used.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Datasheet:
    label: str
    memory: str
    memory_bandwidth: str
    fp32: str
    tf32: str
    fp16: str
    bf16: str
    fp8: str
    source: str
    # The name torch.cuda.get_device_name() reports, under which this device's measured
    # profiles are stored; "" for the CPU entry, whose profiles are named after the local CPU.
    profile_name: str = ""
    # Precisions the device has no tensor cores for: a model in one of them is refused on it.
    unsupported: tuple[str, ...] = ()


# Dense peak rates (no structured sparsity). Sources: NVIDIA A100 datasheet (2021, SXM4),
# NVIDIA H100 datasheet (2023, SXM5), NVIDIA H200 product brief (2024, SXM). The CPU entry is a
# deliberately modest placeholder for local runs; profile it rather than trust it. The A100 has
# no FP8 tensor cores (NVIDIA A100 datasheet: FP64, TF32, BF16, FP16, INT8 and INT4 only), so a model
# in fp8 is refused on it (`unsupported`); its fp8 entry, the fp16 rate, is only a placeholder.
DATASHEETS: dict[str, Datasheet] = {
    "a100_40gb": Datasheet("A100-SXM4-40GB", "40GiB", "1555GB/s", "19.5TFLOPS", "156TFLOPS",
                           "312TFLOPS", "312TFLOPS", "312TFLOPS", "NVIDIA A100 datasheet, SXM4 40GB",
                           "NVIDIA A100-SXM4-40GB", unsupported=("fp8",)),
    "a100_80gb": Datasheet("A100-SXM4-80GB", "80GiB", "2039GB/s", "19.5TFLOPS", "156TFLOPS",
                           "312TFLOPS", "312TFLOPS", "312TFLOPS", "NVIDIA A100 datasheet, SXM4 80GB",
                           "NVIDIA A100-SXM4-80GB", unsupported=("fp8",)),
    "h100_sxm": Datasheet("H100-SXM5-80GB", "80GiB", "3350GB/s", "67TFLOPS", "494.5TFLOPS",
                          "989.5TFLOPS", "989.5TFLOPS", "1979TFLOPS", "NVIDIA H100 datasheet, SXM5",
                          "NVIDIA H100 80GB HBM3"),
    "h200": Datasheet("H200-SXM-141GB", "141GB", "4800GB/s", "67TFLOPS", "494.5TFLOPS",
                      "989.5TFLOPS", "989.5TFLOPS", "1979TFLOPS", "NVIDIA H200 product brief, SXM",
                      "NVIDIA H200"),
    "cpu": Datasheet("CPU", "16GiB", "20GB/s", "100GFLOPS", "100GFLOPS", "50GFLOPS", "50GFLOPS",
                     "50GFLOPS", "placeholder for local CPU runs; profile instead"),
}
