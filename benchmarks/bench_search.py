"""Speed of `task=search`: plans per second for a 70B model on 1,024 to 16,384 GPUs, and the whole
search of Llama-3-70B on 1,024 H100s over the SuperPod and RAMP.

    python benchmarks/bench_search.py [--repeats 3] [--gpus 1024 4096 16384] [--no-cli] [--tiny]

1. Warm caches: one `PlanSearch` per fabric (its `Pricer`, the collective estimator's caches and
   its bound cache warm after a first search); each budget is searched `--repeats` more times and
   the median is printed with the counts: plans enumerated, set aside as invalid (a rule, no
   arithmetic), settled by bounds (rejected by the memory bound or by the time bound, never
   priced) and priced (the whole iteration simulated). The rate printed is priced plans per
   second of pricing time, on one core (the search is single-threaded). The search's gain is in
   how few plans it prices, not in a rate of plans settled by bounds, which would mix units.
2. Cold: the whole command `ddlsim -m experiment=search fabric=ramp,superpod model=hf
   model.config=llama3_70b`, CPU and wall time of a fresh process (imports, fabrics, cold prices),
   as a user runs it on this 2-core machine.

No other tool's numbers are printed: a comparison with another search (e.g. Calculon's exhaustive
one, which prices every plan it enumerates) must be measured side by side on the same machine.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from timing import load_average

REPO = Path(__file__).resolve().parents[1]


def build_search(fabric_name: str):
    import ddlsim.workload.models  # noqa: F401  (registers model=hf)
    from ddlsim.compute.devices import DeviceConfig, DeviceSpec
    from ddlsim.compute.model import ComputeConfig, ComputeModel
    from ddlsim.core.registry import MODELS
    from ddlsim.network.api import make_fabric
    from ddlsim.tasks.search import PlanSearch
    from ddlsim.tasks.search_space import SearchSpace
    from ddlsim.training import TrainingSettings

    device = DeviceSpec.from_config(DeviceConfig(name="h100_sxm"))
    compute = ComputeModel.from_config(ComputeConfig(), device)
    model = MODELS.make("hf", config="llama3_70b", global_batch=1024)
    return PlanSearch(model, device, compute, make_fabric(fabric_name), "best", TrainingSettings(), SearchSpace())


def warm(args: argparse.Namespace) -> None:
    print("Llama-3-70B (global batch 1,024 x 8,192 tokens), H100, warm caches, one core:")
    header = (f"{'fabric':<9} {'GPUs':>7} {'enumerated':>10} {'invalid':>8} {'by bounds':>9} {'(memory':>7} "
              f"{'time)':>7} {'priced':>6} {'search s':>8} {'price s':>8} {'priced/s':>8}")
    print(header)
    for fabric in ("superpod", "ramp"):
        search = build_search(fabric)
        for gpus in args.gpus:
            search.search(gpus)  # fills the caches
            runs = [search.search(gpus)[1] for _ in range(args.repeats)]
            seconds = statistics.median(stats.seconds for stats in runs)
            stats = runs[0]
            price = statistics.median(item.price_s for item in runs)
            print(f"{fabric:<9} {gpus:>7,} {stats.enumerated:>10,} {stats.invalid:>8,} "
                  f"{stats.over_memory + stats.pruned:>9,} {stats.over_memory:>7,} {stats.pruned:>7,} "
                  f"{stats.priced:>6,} {seconds:>8.3f} {price:>8.3f} "
                  f"{stats.priced / price if price else 0:>8,.0f}")
    print("by bounds: settled by the memory or the time bound, never priced; search s: one whole search, CPU "
          "seconds; price s: CPU seconds of pricing; priced/s: priced plans per CPU second of pricing")


def cold() -> None:
    command = [sys.executable, "-m", "ddlsim.app.cli", "-m", "experiment=search", "fabric=ramp,superpod", "model=hf",
               "model.config=llama3_70b"]
    with tempfile.TemporaryDirectory() as directory:
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        start, children = time.perf_counter(), resource.getrusage(resource.RUSAGE_CHILDREN)
        done = subprocess.run([*command, f"hydra.sweep.dir={directory}/sweep"], cwd=directory, env=env,
                              capture_output=True, text=True)
        seconds = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu_s = after.ru_utime + after.ru_stime - children.ru_utime - children.ru_stime
    if done.returncode:
        print(done.stdout[-2000:], done.stderr[-2000:])
        raise SystemExit(f"the search command failed ({done.returncode})")
    print(f"\n{' '.join(command[2:])}: {cpu_s:.1f} s of CPU, {seconds:.1f} s wall, fresh process, this "
          "machine's 2 cores")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--gpus", type=int, nargs="+", default=[1024, 4096, 16384])
    parser.add_argument("--no-cli", action="store_true", help="skip the whole-command measurement")
    parser.add_argument("--tiny", action="store_true", help="smoke-test sizes: checks that the script runs")
    args = parser.parse_args()
    if args.tiny:
        args.repeats, args.gpus, args.no_cli = 1, [64], True
    print(load_average())
    warm(args)
    if not args.no_cli:
        cold()
    print(load_average())


if __name__ == "__main__":
    main()
