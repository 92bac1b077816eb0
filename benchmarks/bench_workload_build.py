"""Time to build workloads: every RAMP Table 9 row (from the loss and from the paper's shape),
every Table 10 row, the TopoOpt models, and equivalent shards on the meta device.

    python benchmarks/bench_workload_build.py [--repeats 20]

Prints, per case, the median and the maximum wall time of one `build_workload` call over
`--repeats` calls (after one warm-up call that fills caches). Target: well under a second per
sweep point, the largest row being 65,536 GPUs.
"""

from __future__ import annotations

import argparse
import statistics
import time

from ddlsim.app.catalog import load_all
from ddlsim.compute.equivalent_registry import build_equivalent_shard
from ddlsim.core.errors import InfeasibleError
from ddlsim.core.registry import MODELS
from ddlsim.workload.parallel import ParallelConfig
from ddlsim.workload.ramp_reference import TABLE9, TABLE10

MEMORY_BYTES = 80 * 2**30


def timed(build, repeats: int) -> tuple[float, float]:
    build()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        build()
        times.append(time.perf_counter() - start)
    return statistics.median(times), max(times)


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
    load_all()
    print(f"{'case':<45} {'median':>10} {'max':>10}")
    for name, build in cases():
        try:
            median, worst = timed(build, args.repeats)
        except InfeasibleError as error:  # a Table 9 loss whose shape no default plan fits
            print(f"{name:<45} infeasible: {str(error)[:80]}")
            continue
        print(f"{name:<45} {median * 1e3:>8.2f}ms {worst * 1e3:>8.2f}ms")


if __name__ == "__main__":
    main()
