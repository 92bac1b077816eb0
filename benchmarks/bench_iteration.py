"""Time of one analytic training iteration, per configuration, next to Calculon's.

    python benchmarks/bench_iteration.py [--repeats 20] [--events] [--overlap-p2p-comm] [--tiny]

Configurations: GPT rows in the style of Megatron-LM's Table 1 (Narayanan et al. 2021: 145.6 B,
310.1 B, 529.6 B and 1,008 B with their TP 8 x PP degrees, 1F1B and interleaved), the 1 T model at
16,384 and 65,536 GPUs with 512 to 2,048 micro-batches, and Llama-3-70B, Llama-3-405B and
DeepSeek-V3 (`model=hf`) under ZeRO, CP, SP, EP and interleaving. Compute on the device's roofline
(A100 for GPT, H100 for the rest), collectives on the DGX SuperPod fat-tree with ``best``.

For each configuration it prints, over `--repeats` runs after one warm-up run that fills the price
caches (the collective estimator's and the `Pricer`'s; "warm" as issue 15 defines it):

- ``iteration``: `simulate_training` on the built workload, the iteration assembly itself;
- ``config``: building the workload and the iteration, what one plan of a sweep costs;
- ``ops``: how many ops the event simulation would lay out (its graph), and with ``--events`` its
  time once, for comparison (graphs up to ``--events-max-ops`` ops), checked to give the same
  iteration time.

Times are CPU time (`time.process_time`), median and maximum, each with the wall-time median
beside it (``wall``); the event simulation's one run is CPU time with its wall time beside. The
load average is the first and the last line.

Calculon (a Megatron-style performance model with a closed-form 1F1B/interleaved bubble and
bandwidth tiers, no topology) evaluates one configuration in 1.59 ms in-process on this machine,
whatever the model size or pipeline depth: measured by the author of issue 15, quoted here, not
measured by this script.
"""

from __future__ import annotations

import argparse
import statistics
import time
from dataclasses import dataclass
from typing import Any

from timing import load_average, timed_cpu_and_wall

CALCULON_MS_PER_CONFIG = 1.59
MEMORY_BYTES = 80 * 2**30


@dataclass(frozen=True)
class Case:
    label: str
    model: dict[str, Any]
    parallel: dict[str, Any]
    device: str


def megatron_gpt(params: str, d_model: int, heads: int, layers: int, pipeline: int, gpus: int, batch: int,
                 virtual: int = 1) -> Case:
    data = gpus // (8 * pipeline)
    label = f"GPT {params} TP 8 x PP {pipeline}{f' x v {virtual}' if virtual > 1 else ''} x DP {data}, " \
            f"{gpus:,} GPUs, {batch // data} micro-batches"
    return Case(label, dict(name="gpt", d_model=d_model, heads=heads, layers=layers, seq_len=2048, global_batch=batch),
                dict(tensor=8, pipeline=pipeline, data=data, micro_batch=1, virtual_stages=virtual), "a100_80gb")


CASES = [
    megatron_gpt("145.6 B", 12288, 96, 80, 8, 1536, 2304),
    megatron_gpt("145.6 B", 12288, 96, 80, 8, 1536, 2304, virtual=2),
    megatron_gpt("310.1 B", 16384, 128, 96, 16, 1920, 2160),
    megatron_gpt("529.6 B", 20480, 128, 105, 35, 2520, 2520),
    megatron_gpt("1,008 B", 25600, 160, 128, 64, 3072, 3072),
    megatron_gpt("1,008 B", 25600, 160, 128, 64, 3072, 3072, virtual=2),
    megatron_gpt("1,008 B", 25600, 160, 128, 64, 16384, 65536),
    megatron_gpt("1,008 B", 25600, 160, 128, 64, 65536, 65536),
    Case("Llama-3-70B TP 8 x CP 2 x PP 4 x v 5 x DP 16, ZeRO 1, SP, 1,024 GPUs, 64 micro-batches",
         dict(name="hf", config="llama3_70b", global_batch=1024),
         dict(tensor=8, context=2, pipeline=4, virtual_stages=5, data=16, zero=1, micro_batch=1,
              sequence_parallel=True), "h100_sxm"),
    Case("Llama-3-70B TP 8 x PP 8 x DP 256, ZeRO 1, SP, 16,384 GPUs, 2,048 micro-batches",
         dict(name="hf", config="llama3_70b", global_batch=524288),
         dict(tensor=8, pipeline=8, data=256, zero=1, micro_batch=1, sequence_parallel=True), "h100_sxm"),
    Case("Llama-3-405B TP 8 x PP 14 x v 3 x DP 128, ZeRO 1, SP, 14,336 GPUs, 14 micro-batches",
         dict(name="hf", config="llama3_405b", global_batch=1792),
         dict(tensor=8, pipeline=14, virtual_stages=3, data=128, zero=1, micro_batch=1, sequence_parallel=True),
         "h100_sxm"),
    Case("DeepSeek-V3 TP 2 x PP 61 x DP 64, EP 64, ZeRO 1, SP, 7,808 GPUs, 64 micro-batches",
         dict(name="hf", config="deepseek_v3", global_batch=4096),
         dict(tensor=2, pipeline=61, data=64, expert=64, zero=1, micro_batch=1, sequence_parallel=True), "h100_sxm"),
]


class Bench:
    """Built once per device: the compute model, the fabric and one price cache per device."""

    def __init__(self) -> None:
        import ddlsim.workload.models  # noqa: F401  (registers model=gpt and model=hf)
        from ddlsim.network.api import make_fabric

        self.fabric = make_fabric("superpod")
        self.pricers: dict[str, Any] = {}
        self.devices: dict[str, Any] = {}

    def pricer(self, device_name: str):
        if device_name not in self.pricers:
            from ddlsim.compute.devices import DeviceConfig, DeviceSpec
            from ddlsim.compute.model import ComputeConfig, ComputeModel
            from ddlsim.training import Pricer
            from ddlsim.training.run import compute_timer, network_timer, reduction_model

            device = DeviceSpec.from_config(DeviceConfig(name=device_name))
            compute = ComputeModel.from_config(ComputeConfig(), device)
            self.devices[device_name] = device
            self.pricers[device_name] = Pricer(network_timer(self.fabric, "best", reduction_model(device)),
                                               compute_timer(compute))
        return self.pricers[device_name]


def cells_ms(times: list[tuple[float, float]]) -> str:
    """CPU median (max) and wall median of `timed_cpu_and_wall`'s times, in ms."""
    cpu = [value for value, _ in times]
    wall = statistics.median(value for _, value in times)
    return f"{1e3 * statistics.median(cpu):8.3f} ({1e3 * max(cpu):7.3f}) {1e3 * wall:8.3f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--events", action="store_true", help="also time the event simulation once per case")
    parser.add_argument("--events-max-ops", type=int, default=150_000,
                        help="skip the event simulation of graphs larger than this (it takes about 10 us per op)")
    parser.add_argument("--overlap-p2p-comm", action="store_true",
                        help="time the interleaved rows with training.overlap_p2p_comm (Megatron-LM's default)")
    parser.add_argument("--tiny", action="store_true", help="smoke-test sizes: checks that the script runs")
    args = parser.parse_args()
    cases = CASES[:2] if args.tiny else CASES
    if args.tiny:
        args.repeats, args.events = 2, True
    from ddlsim.core.registry import MODELS
    from ddlsim.training import TrainingSettings, simulate_training
    from ddlsim.workload.parallel import ParallelConfig

    print(load_average())
    bench = Bench()
    settings = TrainingSettings(overlap_p2p_comm=args.overlap_p2p_comm)
    events = TrainingSettings(engine="events", overlap_p2p_comm=args.overlap_p2p_comm)
    print(f"Calculon: {CALCULON_MS_PER_CONFIG} ms per configuration (measured by the author of issue 15 on this "
          "machine; quoted, not measured here)\n")
    header = f"{'configuration':<94} {'iteration ms':>18} {'wall':>8} {'config ms':>18} {'wall':>8} {'ops':>9}"
    print(header + ("   events s     wall" if args.events else ""))
    medians = []
    for case in cases:
        options = dict(case.model)
        model = MODELS.make(options.pop("name"), **options)
        parallel = ParallelConfig(**case.parallel)
        pricer = bench.pricer(case.device)

        def build(model=model, parallel=parallel):
            return model.build_workload(parallel, MEMORY_BYTES)

        workload = build()
        first = simulate_training(workload, pricer, settings)  # fills the price caches
        iteration = timed_cpu_and_wall(lambda w=workload, p=pricer: simulate_training(w, p, settings), args.repeats)
        config = timed_cpu_and_wall(lambda b=build, p=pricer: simulate_training(b(), p, settings), args.repeats)
        medians.append(statistics.median(cpu for cpu, _ in iteration))
        line = f"{case.label:<94} {cells_ms(iteration)} {cells_ms(config)} {first.iteration.num_ops:>9,}"
        if args.events and first.iteration.num_ops > args.events_max_ops:
            line += "          -        -"
        elif args.events:
            start_cpu, start = time.process_time(), time.perf_counter()
            slow = simulate_training(workload, pricer, events)
            seconds_cpu, seconds = time.process_time() - start_cpu, time.perf_counter() - start
            assert abs(slow.iteration.iteration_time_s / first.iteration.iteration_time_s - 1) < 1e-9
            line += f" {seconds_cpu:10.2f} {seconds:8.2f}"
        print(line)
    print(f"\nCPU median (max) ms, wall median ms; iteration CPU median over configurations "
          f"{1e3 * statistics.median(medians):.3f} ms, largest {1e3 * max(medians):.3f} ms; Calculon "
          f"{CALCULON_MS_PER_CONFIG} ms per configuration (quoted)")
    print(load_average())


if __name__ == "__main__":
    main()
