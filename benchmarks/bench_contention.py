"""Cost of network.contention=on: a 65,536-GPU analytic iteration, the ramp_megatron sweep, and the engine.

    python benchmarks/bench_contention.py [--repeats 5] [--tiny]

1. One analytic iteration of Llama-3-70B on 65,536 H100s (TP 8 x DP 8,192, ZeRO 3, sequence
   parallel) on the DGX SuperPod fat-tree with ``training.overlap=all`` (FSDP prefetch, TP overlap,
   DP buckets): `simulate_training` with contention off and on, warm (price caches filled by one
   run first), median over `--repeats`; the iteration and exposed communication with each.
   Target: at most 1 s of CPU time with contention (`time.process_time`).
2. The ramp_megatron sweep in this process (`ddlsim.app.sweep.inprocess.run_sweep`) with
   ``network.contention=off`` and ``on``, as shipped (``training.overlap=none``) and with
   ``training.overlap=dp_backward``; median over `--repeats` after one warm-up. Target: on at
   most twice off.
3. The fluid engine alone: two to eight coflows sharing 65,536 nodes' resources, solves per second.
`--tiny` runs 1 on 1,024 GPUs and 3 once, to check that the script runs.

Times are CPU time (`time.process_time`) medians, with the wall-time median beside them; the load
average is the first and the last line.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from timing import load_average, timed_cpu_and_wall  # noqa: E402


def medians_s(times: list[tuple[float, float]]) -> tuple[float, float]:
    """(CPU, wall) medians of `timed_cpu_and_wall`'s times."""
    return statistics.median(cpu for cpu, _ in times), statistics.median(wall for _, wall in times)


def iteration_case(gpus: int, repeats: int) -> None:
    import ddlsim.workload.models  # noqa: F401  (registers model=hf)
    from ddlsim.compute.devices import DeviceConfig, DeviceSpec
    from ddlsim.compute.model import ComputeConfig, ComputeModel
    from ddlsim.core.registry import MODELS
    from ddlsim.network.api import make_fabric
    from ddlsim.training import Pricer, TrainingSettings, simulate_training
    from ddlsim.training.run import compute_timer, network_timer, reduction_model
    from ddlsim.workload.parallel import ParallelConfig

    fabric = make_fabric("superpod")
    device = DeviceSpec.from_config(DeviceConfig(name="h100_sxm"))
    pricer = Pricer(network_timer(fabric, "best", reduction_model(device)),
                    compute_timer(ComputeModel.from_config(ComputeConfig(), device)))
    model = MODELS.make("hf", config="llama3_70b", global_batch=gpus // 8)
    workload = model.build_workload(ParallelConfig(tensor=8, data=gpus // 8, zero=3, micro_batch=1,
                                                   sequence_parallel=True), 80 * 2**30)
    print(f"Llama-3-70B TP 8 x DP {gpus // 8:,} ZeRO 3 on superpod, training.overlap=all, {gpus:,} GPUs")
    for contention in (False, True):
        settings = TrainingSettings(overlap="all", contention=contention)
        result = simulate_training(workload, pricer, settings, fabric=fabric)
        cpu_s, wall_s = medians_s(timed_cpu_and_wall(
            lambda settings=settings: simulate_training(workload, pricer, settings, fabric=fabric), repeats))
        it = result.iteration
        print(f"  contention {'on ' if contention else 'off'}: {cpu_s * 1e3:8.1f} ms of CPU time "
              f"per iteration (median of {repeats}; wall median {wall_s * 1e3:.1f} ms), iteration "
              f"{it.iteration_time_s:.4f} s, exposed communication {it.exposed_comm_time_s:.4f} s")


def sweep_case(repeats: int) -> None:
    from ddlsim.app.sweep.inprocess import run_sweep

    for overlap in ("none", "dp_backward"):
        medians, walls = {}, {}
        for contention in ("off", "on"):
            overrides = ["experiment=ramp_megatron", f"training.overlap={overlap}", f"network.contention={contention}"]
            run_sweep(overrides)
            medians[contention], walls[contention] = medians_s(
                timed_cpu_and_wall(lambda overrides=overrides: run_sweep(overrides), repeats))
        print(f"ramp_megatron sweep, training.overlap={overlap}: CPU off {medians['off']:.2f} s, on "
              f"{medians['on']:.2f} s (median of {repeats}; on / off = {medians['on'] / medians['off']:.2f}, "
              f"target <= 2); wall median off {walls['off']:.2f} s, on {walls['on']:.2f} s")


def engine_case(repeats: int) -> None:
    import numpy as np

    from ddlsim.network.contention.fluid import FluidNetwork

    nodes = 65_536
    capacity = np.full(2 * nodes, 4e11)
    for count in (2, 8):
        def run(count=count):
            network = FluidNetwork(capacity)
            for key in range(count):
                resources = np.arange(2 * nodes)
                network.submit(key, 1.0 + key, resources, np.full(resources.size, 3e11), max_fill=1.0)
            while network.busy():
                network.advance()
            return network.solves

        solves = run()
        cpu_s, wall_s = medians_s(timed_cpu_and_wall(run, repeats))
        print(f"engine: {count} coflows on {2 * nodes:,} resources: {cpu_s * 1e3:.1f} ms of CPU time (median; wall "
              f"median {wall_s * 1e3:.1f} ms) for {solves} solves ({solves / cpu_s:,.0f} solves per CPU second)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--tiny", action="store_true", help="smoke-test sizes: checks that the script runs")
    args = parser.parse_args()
    if args.tiny:
        iteration_case(1024, 1)
        engine_case(1)
        return 0
    iteration_case(65_536, args.repeats)
    engine_case(args.repeats)
    sweep_case(args.repeats)
    return 0


if __name__ == "__main__":
    print(load_average(), flush=True)
    started_cpu, started = time.process_time(), time.perf_counter()
    code = main()
    print(f"total {time.process_time() - started_cpu:.1f} s of CPU, {time.perf_counter() - started:.1f} s wall")
    print(load_average())
    sys.exit(code)
