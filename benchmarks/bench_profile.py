"""How long profiling one shard takes, and how fast the profile store answers.

    python benchmarks/bench_profile.py                 # defaults below, CPU (or CUDA if present)
    python benchmarks/bench_profile.py --repeats 5 --iterations 20 --threads 1

Part 1 profiles one Megatron layer shard (`--signature`) `--repeats` times, from building the
equivalent model to the written CSV rows, and prints the median time. Part 2 prices many
compute tasks through a ComputeModel reading a profile file of `--rows` rows, first lookups
(exact, scaled and roofline) and then cached ones, and prints the median time per estimate.

Times are CPU time (`time.process_time`: every thread of this process, so torch's CPU threads
can make it exceed the wall time) with wall time beside; the load average is the first and the
last line. The per-phase times of part 1 are the profiler's own measurements of the shard.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time

from timing import load_average

DEFAULT_SIGNATURE = ("megatron_layer|bias=1,causal=0,d_model=256,dropout=1,ffn=1024,gated=0,heads=4,kv_heads=4,"
                     "rmsnorm=0,seq_len=128,tp=1|b=4|fp16|ckpt")


def bench_profiling(signature_key: str, repeats: int, iterations: int, warmup: int, device: str) -> None:
    from ddlsim.compute.identity import local_identity
    from ddlsim.compute.profile_file import parse_signature_key
    from ddlsim.compute.profiler import ProfileSettings
    from ddlsim.compute.profiling import ProfileJob, profile_jobs

    identity = local_identity(device)
    job = ProfileJob(parse_signature_key(signature_key))
    settings = ProfileSettings(iterations=iterations, warmup=warmup)
    seconds, cpu_seconds, last = [], [], None
    with tempfile.TemporaryDirectory() as directory:
        for _ in range(repeats):
            started_cpu, started = time.process_time(), time.perf_counter()
            (last,) = profile_jobs([job], identity, directory, settings=settings, replace=True, progress=False)
            seconds.append(time.perf_counter() - started)
            cpu_seconds.append(time.process_time() - started_cpu)
    print(f"device: {identity.name} (torch {identity.torch_version})")
    print(f"shard: {signature_key}")
    print(f"profiling one shard ({warmup} warm-up + {iterations} profiled iterations + 1 counting pass), "
          f"{repeats} repeats: CPU median {statistics.median(cpu_seconds):.3f} s (min {min(cpu_seconds):.3f} s, "
          f"max {max(cpu_seconds):.3f} s); wall median {statistics.median(seconds):.3f} s "
          f"(min {min(seconds):.3f} s, max {max(seconds):.3f} s)")
    for phase in last.measurement.phases:
        print(f"  {phase.phase.value:<10} {phase.time_s * 1e3:9.3f} ms  {phase.kernels:4d} kernels  "
              f"{phase.achieved_flop_per_s / 1e9:8.2f} GFLOP/s")


def bench_lookups(rows: int, tasks: int) -> None:
    from ddlsim.compute.devices import DeviceConfig, DeviceSpec
    from ddlsim.compute.model import ComputeConfig, ComputeModel
    from ddlsim.compute.profile_file import encode_shape, profile_path, write_rows
    from ddlsim.core.work import ComputeTask, ShardSignature

    device = DeviceSpec.from_config(DeviceConfig(name="h100_sxm"))
    with tempfile.TemporaryDirectory() as directory:
        signatures = [ShardSignature("megatron_layer", (("d_model", 64 * (1 + i)), ("heads", 1), ("seq_len", 1024)), 8)
                      for i in range(rows)]
        write_rows(profile_path(directory, device.profile_name, "megatron_layer"), [
            {"signature_key": s.key(), "model_kind": s.model_kind, "shape": encode_shape(s), "local_batch": "8",
             "precision": "fp16", "checkpointing": "false", "phase": "forward", "device": device.profile_name,
             "time_s": repr(1e-6 * (1 + i)), "counted_flop": repr(1e9 * (1 + i) ** 2), "counted_bytes": "1e6",
             "kernels": "20"} for i, s in enumerate(signatures)])
        probe = [ComputeTask("t", "forward", ShardSignature("megatron_layer", (("d_model", 32 * (1 + i)), ("heads", 1),
                                                                               ("seq_len", 1024)), 8),
                             flop=2.5e8 * (1 + i) ** 2, memory_bytes=1e6) for i in range(tasks)]
        config = ComputeConfig(profile_dirs=[directory], shipped_profiles=False, max_scale_ratio=0)
        first, cached, first_cpu, cached_cpu = [], [], [], []
        for _ in range(5):
            model = ComputeModel.from_config(config, device)
            started_cpu, started = time.process_time(), time.perf_counter()
            sources = [model.estimate(task).source.value for task in probe]
            first.append((time.perf_counter() - started) / tasks)
            first_cpu.append((time.process_time() - started_cpu) / tasks)
            started_cpu, started = time.process_time(), time.perf_counter()
            for task in probe:
                model.estimate(task)
            cached.append((time.perf_counter() - started) / tasks)
            cached_cpu.append((time.process_time() - started_cpu) / tasks)
    mix = {source: sources.count(source) for source in sorted(set(sources))}
    print(f"store: {rows} profile rows, {tasks} distinct tasks ({mix})")
    print(f"  first estimate (store load included): CPU median {statistics.median(first_cpu) * 1e6:.1f} us per "
          f"task, wall median {statistics.median(first) * 1e6:.1f} us per task")
    print(f"  cached estimate:                      CPU median {statistics.median(cached_cpu) * 1e6:.2f} us per "
          f"task, wall median {statistics.median(cached) * 1e6:.2f} us per task")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--signature", default=DEFAULT_SIGNATURE)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--iterations", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--device", default="auto", help="auto, cpu or cuda")
    parser.add_argument("--threads", type=int, default=0, help="torch CPU threads (0: torch's default)")
    parser.add_argument("--rows", type=int, default=1000)
    parser.add_argument("--tasks", type=int, default=2000)
    parser.add_argument("--tiny", action="store_true", help="smoke-test sizes: checks that the script runs")
    args = parser.parse_args()
    if args.tiny:
        args.repeats, args.iterations, args.warmup, args.rows, args.tasks, args.device = 1, 1, 0, 10, 20, "cpu"
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)
    print(load_average())
    bench_profiling(args.signature, args.repeats, args.iterations, args.warmup, args.device)
    bench_lookups(args.rows, args.tasks)
    print(load_average())


if __name__ == "__main__":
    main()
