"""Time to build workloads: every RAMP Table 9 row (from the loss and from the paper's shape),
every Table 10 row, the TopoOpt models, and equivalent shards on the meta device.

    python benchmarks/bench_workload_build.py [--repeats 20]

Prints, per case, the median and the maximum CPU time (`time.process_time`) of one
`build_workload` call over `--repeats` calls (after one warm-up call that fills caches), with the
median and the maximum wall time beside them. Times are CPU time with wall time beside; the load
average is the first and the last line. Target: well under a second per sweep point, the largest
row being 65,536 GPUs.
"""

from __future__ import annotations

import argparse
import statistics

from timing import load_average, timed_cpu_and_wall

from ddlsim.app.catalog import load_all
from ddlsim.compute.equivalent_registry import build_equivalent_shard
from ddlsim.core.errors import InfeasibleError
from ddlsim.core.registry import MODELS
from ddlsim.workload.parallel import ParallelConfig
from ddlsim.workload.ramp_reference import TABLE9, TABLE10

MEMORY_BYTES = 80 * 2**30


def build_times(build, repeats: int) -> tuple[float, float, float, float]:
    """CPU median, CPU max, wall median and wall max of `repeats` calls of `build`, after one more."""
    build()
    times = timed_cpu_and_wall(build, repeats)
    cpu, wall = [value for value, _ in times], [value for _, value in times]
    return statistics.median(cpu), max(cpu), statistics.median(wall), max(wall)


def cases():
    parallel = ParallelConfig()
    for row in TABLE9:
        loss = MODELS.make("megatron", target_loss=row.loss)
        shape = MODELS.make("megatron", target_loss=row.loss, d_model=row.d_model, heads=row.heads, layers=row.layers)
        yield f"table9 CE {row.loss} from loss", lambda m=loss: m.build_workload(parallel, MEMORY_BYTES)
        yield f"table9 CE {row.loss} from shape", lambda m=shape: m.build_workload(parallel, MEMORY_BYTES)
    for row in TABLE10:
        model = MODELS.make("dlrm", num_tables=row.tables, rows=int(row.rows_total) // row.tables,
                            embedding_dim=row.sparse_feature_size, num_gpus=row.gpus)
        yield f"table10 {row.gpus} GPUs", lambda m=model: m.build_workload(parallel, MEMORY_BYTES)
    for which in ("dlrm", "candle", "bert", "ncf", "resnet50", "vgg16"):
        model = MODELS.make("topoopt", model=which)
        yield f"topoopt {which}", lambda m=model: m.build_workload(parallel, MEMORY_BYTES)
    largest = MODELS.make("megatron", target_loss=1.0, d_model=262144, heads=65536, layers=90)
    signature = next(largest.build_workload(parallel, MEMORY_BYTES).compute_tasks()).signature
    yield "equivalent layer d=262144 on meta", lambda: build_equivalent_shard(signature, "meta")
    dlrm = MODELS.make("dlrm", num_tables=256, rows=10**7, embedding_dim=16384, num_gpus=65536)
    dlrm_signature = next(dlrm.build_workload(ParallelConfig(micro_batch=256), MEMORY_BYTES).compute_tasks()).signature
    yield "equivalent DLRM shard (65,536 GPUs) on meta", lambda: build_equivalent_shard(dlrm_signature, "meta")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--tiny", action="store_true", help="smoke-test sizes: checks that the script runs")
    args = parser.parse_args()
    if args.tiny:
        args.repeats = 1
    print(load_average())
    load_all()
    print(f"{'case':<45} {'CPU median':>10} {'CPU max':>10} {'median':>10} {'max':>10}  (median, max: wall)")
    for name, build in cases():
        try:
            cpu_median, cpu_worst, median, worst = build_times(build, args.repeats)
        except InfeasibleError as error:  # a Table 9 loss whose shape no default plan fits
            print(f"{name:<45} infeasible: {str(error)[:80]}")
            continue
        print(f"{name:<45} {cpu_median * 1e3:>8.2f}ms {cpu_worst * 1e3:>8.2f}ms {median * 1e3:>8.2f}ms "
              f"{worst * 1e3:>8.2f}ms")
    print(load_average())


if __name__ == "__main__":
    main()
