"""Per-stage memory of Llama 3 405B as Meta trained it (Llama 3 paper, Table 4), by Megatron-Core's
accounting (`ddlsim/workload/transformer/memory.py`): TP 8, PP 16, ZeRO 1, SP, flash attention, bf16,
micro-batch 1, 16M tokens a step; sequences of 8,192 on 8,192 and 16,384 GPUs and of 131,072 with
CP 16 on 16,384. Prints model states, activations and total of the first, a middle and the last
stage for 1F1B and interleaved schedules, with and without recompute, against an 80 GiB H100,
then the CPU time (`time.process_time`) of partitioning every plan, with its wall time beside.
The load average is the first and the last line.

    python benchmarks/memory_llama3_405b.py [--tiny]
"""

from __future__ import annotations

import argparse
import time

from timing import load_average

import ddlsim.workload.models  # noqa: F401  (registers model=hf)
from ddlsim.compute.devices import DeviceConfig, DeviceSpec
from ddlsim.core.registry import MODELS
from ddlsim.workload.parallel import ParallelConfig
from ddlsim.workload.transformer.plan import partition_decoder

PLANS = [(8192, 1, 8192), (8192, 1, 16384), (131072, 16, 16384)]  # sequence, CP, GPUs
TOKENS_PER_BATCH = 16 * 2**20
GB = 1e9


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tiny", action="store_true", help="smoke test: the first plan only")
    plans = PLANS[:1] if parser.parse_args().tiny else PLANS
    print(load_average())
    started_cpu, started = time.process_time(), time.perf_counter()
    count = 0
    device = DeviceSpec.from_config(DeviceConfig(name="h100_sxm")).memory_bytes
    print(f"H100 memory: {device / GB:.1f} GB (80 GiB); GB = 10^9 bytes; states / activations / total per GPU")
    print(f"{'seq':>7} {'CP':>3} {'GPUs':>6} {'m':>3} {'v':>2} {'recompute':<9} {'stages':<9} "
          f"{'stage 0':>18} {'stage 1':>18} {'stage 15':>18} {'fits':>5}")
    for seq, cp, gpus in plans:
        model = MODELS.make("hf", config="llama3_405b", precision="bf16", seq_len=seq,
                            global_batch=TOKENS_PER_BATCH // seq)
        for v in (1, 2, 4, 8):
            for recompute in ("none", "selective", "full"):
                parallel = ParallelConfig(tensor=8, context=cp, pipeline=16, virtual_stages=v, zero=1,
                                          sequence_parallel=True, micro_batch=1, gpus=gpus, max_gpus=gpus,
                                          recompute=recompute)
                plan = partition_decoder(model.decoder, parallel, device, model.global_batch, check_memory=False)
                count += 1
                cells = [f"{s.state_bytes / GB:4.1f}/{s.activation_bytes / GB:5.1f}/{s.total_bytes / GB:5.1f}"
                         for s in (plan.stages[0], plan.stages[1], plan.stages[-1])]
                fits = "yes" if plan.memory_per_gpu_bytes <= device else "no"
                print(f"{seq:>7} {cp:>3} {gpus:>6} {plan.micro_batches:>3} {v:>2} {recompute:<9} "
                      f"{','.join(map(str, sorted(set(plan.stage_layers)))):<9} "
                      f"{cells[0]:>18} {cells[1]:>18} {cells[2]:>18} {fits:>5}")
    print(f"{count} plans built and printed in {time.process_time() - started_cpu:.2f} s of CPU "
          f"({time.perf_counter() - started:.2f} s wall)")
    print(load_average())


if __name__ == "__main__":
    main()
