"""Compute per token of Llama-3-405B on H100s at sequence 8,192 and at 131,072 with CP 16
(issue 24's "Long context" acceptance row: within 1.5x).

    python benchmarks/bench_long_context.py [--pipeline 14] [--micro-batch 1]

Both shapes are built by the analytic path (`model=hf model.config=llama3_405b`: flash
attention, bf16, TP 8, pipeline `--pipeline` stages, no recompute) and priced by the kernel
roofline with the H100's published constants (`compute/kernel_tables.py`). This is a compute
comparison only: the plan is partitioned with a device memory of 1 PB, so that the memory
model (rewritten elsewhere) does not refuse it; PP 16, as Llama 3 ran, needs uneven stages (126
layers), so PP 14 by default (the per-token figure does not depend on how layers are staged).

GPU-seconds per token = for one micro-batch, the compute of every stage (its layers, the
embedding on the first and the output layer on the last), times the TP x CP GPUs that run each
stage, over the micro-batch's tokens; the optimizer (once per global batch of millions of
tokens) is left out. Printed per length: that figure, the attention kernels' share of it, and
the ratio of the two lengths; and, per length, how long building and pricing it took: CPU time
(`time.process_time`) with wall time beside. The load average is the first and the last line.
"""

from __future__ import annotations

import argparse
import time
from collections import defaultdict

from timing import load_average

from ddlsim.compute.kernel_registry import kernels_for
from ddlsim.compute.kernel_roofline import kernel_time_s
from ddlsim.compute.options import build_compute
from ddlsim.core.registry import build
from ddlsim.core.types import Phase, Precision
from ddlsim.core.work import ComputeTask
from ddlsim.workload.parallel import ParallelConfig
from ddlsim.workload.transformer.hf_config import decoder_shape, load_config
from ddlsim.workload.transformer.workload import build_decoder_workload

NO_MEMORY_LIMIT = 10**15
CASES = ((8192, 1), (131072, 16))  # (sequence, context parallel)


def per_token(seq: int, cp: int, pipeline: int, micro_batch: int, device, compute) -> tuple[float, dict, float]:
    """(GPU-seconds per token, seconds by kernel class, FLOPs per token) of one micro-batch over all
    stages."""
    shape = decoder_shape(load_config("llama3_405b"), seq_len=seq)
    parallel = ParallelConfig(tensor=8, pipeline=pipeline, context=cp, data=1, micro_batch=micro_batch,
                              recompute="none", sequence_parallel=True)
    workload = build_decoder_workload("llama3_405b", shape, parallel, NO_MEMORY_LIMIT,
                                      global_batch=micro_batch * pipeline, num_steps=0, precision=Precision.BF16,
                                      grad_precision=Precision.BF16)
    peak, bandwidth = device.peak(Precision.BF16), device.memory_bandwidth_bytes_per_s
    by_class: dict[str, float] = defaultdict(float)
    flop = 0.0
    for block in workload.blocks:
        if not block.per_micro_batch:
            continue
        stages = len(block.stages) if block.stages else pipeline
        for task in block.tasks:
            if isinstance(task, ComputeTask) and task.phase is not Phase.OPTIMIZER:
                for kernel in kernels_for(task.signature, task.phase):
                    time_s = kernel_time_s(kernel, peak, bandwidth, compute.roofline.kernel)
                    by_class[kernel.kernel_class.value] += stages * block.repeat * task.count * time_s
                    flop += stages * block.repeat * task.count * kernel.flop
    gpus_per_stage = 8 * cp
    tokens = micro_batch * seq
    return (sum(by_class.values()) * gpus_per_stage / tokens,
            {k: v * gpus_per_stage / tokens for k, v in by_class.items() if v}, flop * gpus_per_stage / tokens)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pipeline", type=int, default=14)
    parser.add_argument("--micro-batch", type=int, default=1)
    parser.add_argument("--tiny", action="store_true", help="smoke test (it is already small: runs as usual)")
    args = parser.parse_args()
    print(load_average())
    device = build("device", "h100_sxm")
    compute = build_compute("roofline", device)
    results, flops = {}, {}
    for seq, cp in CASES:
        started_cpu, started = time.process_time(), time.perf_counter()
        total, by_class, flop = per_token(seq, cp, args.pipeline, args.micro_batch, device, compute)
        cpu_s, wall_s = time.process_time() - started_cpu, time.perf_counter() - started
        attention = by_class.get("attention_forward", 0.0) + by_class.get("attention_backward", 0.0)
        results[seq], flops[seq] = total, flop
        classes = ", ".join(f"{name} {1e6 * value:.2f}" for name, value in sorted(by_class.items()))
        print(f"sequence {seq:>7,} CP {cp:>2}: {1e6 * total:.2f} GPU-us and {flop / 1e9:.2f} GFLOP per token; "
              f"attention {100 * attention / total:.1f} % of the time ({classes}); built and priced in "
              f"{cpu_s:.2f} s of CPU ({wall_s:.2f} s wall)")
    long, short = CASES[1][0], CASES[0][0]
    print(f"ratio {long:,} / {short:,}: {results[long] / results[short]:.3f} in time (acceptance: at most 1.5), "
          f"{flops[long] / flops[short]:.3f} in FLOPs (the ratio at equal kernel efficiency)")
    print(load_average())


if __name__ == "__main__":
    main()
