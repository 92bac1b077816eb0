"""Capture speed and memory at scale: Llama-3 shapes under FSDP2 x TP 8 on fake process groups.

    python benchmarks/bench_capture.py [--cases llama3_8b,llama3_70b] [--repeats 3] [--warmup 1]

Each capture runs in a fresh Python process (so peak memory is that capture's alone) with the
program of ``examples/llama_fsdp_tp.py``: a transformers ``LlamaForCausalLM`` built from its config
(bf16, batch 1, sequence 8192), TP 8 with sequence parallelism, FSDP2 over the data-parallel
dimension, AdamW, on a (128, 8) mesh of 1,024 fake ranks. Prints, per case, the median CPU time
of ``ddlsim.capture`` (building the model, sharding it and recording one step; importing
transformers comes before the clock) in that process (`time.process_time`: user + system, what
the capture costs on an idle core, less sensitive than wall time to other jobs on the machine),
with its median wall time beside (what a user waits for), each run's CPU and wall time, the
load average when each run ended, the peak resident set size of the process, and what was
recorded. The load average is also the first and the last line. Targets (issue 17, two CPU
cores): Llama-3-70B at most 60 s and 4 GB; Llama-3-8B at most 15 s.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

from timing import load_average

REPO = Path(__file__).resolve().parents[1]
CHILD = """
import json, os, resource, sys, time
sys.path.insert(0, {repo!r})
import transformers.models.llama.modeling_llama  # the program's own library, imported before the clock starts
import ddlsim
from functools import partial
from examples.llama_fsdp_tp import build
start, cpu_start = time.perf_counter(), time.process_time()
program = ddlsim.capture(partial(build, shape={shape!r}, batch=1), ({dp}, {tp}), ("dp", "tp"), warmup={warmup})
wall, cpu = time.perf_counter() - start, time.process_time() - cpu_start
events = program.events
print(json.dumps({{"wall_s": wall, "cpu_s": cpu, "load_1min": os.getloadavg()[0],
                  "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
                  "ops": int((events.kind == "compute").sum()), "collectives": int((events.kind == "collective").sum()),
                  "tflop": float(events.flop.sum()) / 1e12}}))
"""
TARGETS = {"llama3_70b": (60.0, 4e9), "llama3_8b": (15.0, None)}


def run_case(shape: str, dp: int, tp: int, warmup: int) -> dict:
    code = CHILD.format(repo=str(REPO), shape=shape, dp=dp, tp=tp, warmup=warmup)
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    lines = [line for line in result.stdout.splitlines() if line.startswith("{")]
    if result.returncode or not lines:
        raise RuntimeError(f"{shape} capture failed:\n{result.stderr[-3000:]}")
    return json.loads(lines[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", default="llama3_8b,llama3_70b")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--dp", type=int, default=128)
    parser.add_argument("--tp", type=int, default=8)
    parser.add_argument("--warmup", type=int, default=0, help="warm-up steps before the recorded one")
    parser.add_argument("--tiny", action="store_true", help="smoke-test sizes: checks that the script runs")
    args = parser.parse_args()
    if args.tiny:
        args.cases, args.repeats, args.dp, args.tp = "tiny", 1, 2, 2
    print(load_average(), flush=True)
    for shape in args.cases.split(","):
        runs = [run_case(shape, args.dp, args.tp, args.warmup) for _ in range(args.repeats)]
        wall = statistics.median(run["wall_s"] for run in runs)
        cpu = statistics.median(run["cpu_s"] for run in runs)
        load = ", ".join(f"{run['load_1min']:.1f}" for run in runs)
        rss = max(run["peak_rss_bytes"] for run in runs)
        first = runs[0]
        limit_s, limit_bytes = TARGETS.get(shape, (None, None))
        verdict = []
        if limit_s:
            verdict.append(f"time {'within' if wall <= limit_s else 'OVER'} {limit_s:g} s "
                           f"(CPU time {'within' if cpu <= limit_s else 'OVER'})")
        if limit_bytes:
            verdict.append(f"memory {'within' if rss <= limit_bytes else 'OVER'} {limit_bytes / 1e9:g} GB")
        each_cpu = ", ".join(f"{run['cpu_s']:.1f}" for run in runs)
        each = ", ".join(f"{run['wall_s']:.1f}" for run in runs)
        print(f"{shape} FSDP2 x TP {args.tp} on {args.dp * args.tp} fake ranks (warm-up {args.warmup}): median "
              f"CPU time {cpu:.1f} s ({each_cpu}), median wall {wall:.1f} s ({each}) over {len(runs)} runs "
              f"(load average {load}), peak RSS {rss / 1e9:.2f} GB; {first['ops']} compute ops, "
              f"{first['collectives']} collectives, {first['tflop']:.0f} TFLOP per rank; {'; '.join(verdict)}",
              flush=True)
    print(load_average())


if __name__ == "__main__":
    main()
