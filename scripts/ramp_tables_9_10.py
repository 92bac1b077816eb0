"""Reconstruct RAMP Tables 9 (Megatron) and 10 (DLRM) with ddlsim's partitioners, beside the paper.

Table 9 is built twice: from the target loss alone (the scaling laws choose the shape) and from
the paper's architecture (d_model, heads, layers). Table 10 is built from its inputs, once with
the local batch that fills memory and once with the paper's batch per GPU. Each table is
followed by the per-column agreement: how many rows match the paper as printed (rounded or
truncated to its digits) and the median and range of ours / paper.

    python scripts/ramp_tables_9_10.py                 # A100 80 GB, ddlsim defaults
    python scripts/ramp_tables_9_10.py --markdown      # the same as Markdown tables
    python scripts/ramp_tables_9_10.py --activation-offload   # RAMP 7.3's offloaded checkpoints
    python scripts/ramp_tables_9_10.py --torchrec-max-gpus 1024  # also ask torchrec's planner
"""

from __future__ import annotations

import argparse
import statistics
import time

from ddlsim.catalog import load_all
from ddlsim.registry import DEVICES, MODELS
from ddlsim.workload.parallel import ParallelConfig
from ddlsim.workload.ramp_reference import TABLE9, TABLE10, agrees_as_printed


def short(value: float) -> str:
    """Print like the paper: 574M, 1.13B, 65.6K."""
    if value == 0:
        return "0"
    for suffix, scale in (("T", 1e12), ("B", 1e9), ("M", 1e6), ("K", 1e3)):
        if abs(value) >= scale:
            return f"{value / scale:.3g}{suffix}"
    return f"{value:.4g}"


def table9(parallel: ParallelConfig, memory_bytes: int, from_loss: bool) -> list[dict[str, tuple[float, float]]]:
    rows = []
    for row in TABLE9:
        shape = {} if from_loss else {"d_model": row.d_model, "heads": row.heads, "layers": row.layers}
        # widen_heads: RAMP Table 9's convention of as many heads as MP ranks (ddlsim's default refuses it).
        model = MODELS.make("megatron", target_loss=row.loss, widen_heads=True, **shape)
        plan = model.build_workload(parallel, memory_bytes).plan
        dp_msg = plan["dp_message_bytes"] if plan["dp_degree"] > 1 else 2 * plan["params_per_gpu"]
        paper_local = row.global_batch / row.dp
        rows.append({
            "CE loss": (row.loss, row.loss), "d_model": (plan["d_model"], row.d_model),
            "heads": (plan["heads"], row.heads), "layers": (plan["layers"], row.layers),
            "steps": (plan["num_steps"], row.steps),
            "global batch": (plan["global_batch"], row.global_batch), "params": (plan["params_total"], row.params),
            "params/GPU": (plan["params_per_gpu"], row.params_per_gpu), "GPUs": (plan["num_gpus"], row.gpus),
            "DP": (plan["dp_degree"], row.dp), "MP": (plan["tp_degree"], row.mp),
            "DP msg B": (dp_msg, row.dp_message_bytes), "MP msg B": (plan["tp_message_bytes"], row.mp_message_bytes),
            "local batch": (plan["local_batch"], paper_local),
            # our message formula (b x s x h x 2 bytes) fed the paper's own local batch and width
            "MP msg B @paper b": (2 * paper_local * 1024 * row.d_model if row.mp > 1 else 0, row.mp_message_bytes),
        })
    return rows


def table10(memory_bytes: int, paper_batch: bool) -> list[dict[str, tuple[float, float]]]:
    rows = []
    for row in TABLE10:
        model = MODELS.make("dlrm", num_tables=row.tables, rows=int(row.rows_total) // row.tables,
                            embedding_dim=row.sparse_feature_size, dense_features=row.dense_features,
                            hidden=row.mlp_hidden, bottom_layers=row.bottom_layers, top_layers=row.top_layers,
                            num_gpus=row.gpus)
        parallel = ParallelConfig(micro_batch=row.batch_per_gpu if paper_batch else 0)
        plan = model.build_workload(parallel, memory_bytes).plan
        rows.append({
            "GPUs": (plan["num_gpus"], row.gpus), "tables": (plan["num_tables"], row.tables),
            "part. feature": (plan["shard_dim"], row.partitioned_feature_size),
            "batch/GPU": (plan["local_batch"], row.batch_per_gpu), "params": (plan["params_total"], row.params),
            "part. params": (plan["params_per_gpu"], row.params_per_gpu),
            "all-to-all B": (plan["all_to_all_bytes"], float("nan")),
            "all-reduce B": (plan["dp_message_bytes"], float("nan")),
        })
    return rows


def torchrec_check(memory_bytes: int, max_gpus: int) -> str:
    """torchrec's planner on the Table 10 rows of at most `max_gpus` GPUs, column width as in the paper."""
    from ddlsim.workload.dlrm_arch import DlrmShape
    from ddlsim.workload.dlrm_partition import partition_dlrm
    from ddlsim.workload.torchrec_planner import torchrec_partition

    lines = ["\nTable 10 placement by torchrec's EmbeddingShardingPlanner (min_partition = the paper's width)"]
    for row in TABLE10:
        if row.gpus > max_gpus:
            continue
        shape = DlrmShape(row.tables, int(row.rows_total) // row.tables, row.sparse_feature_size,
                          row.dense_features, row.mlp_hidden, row.bottom_layers, row.top_layers)
        start = time.perf_counter()
        ours = partition_dlrm(shape, row.gpus, memory_bytes, local_batch=row.batch_per_gpu)
        theirs = torchrec_partition(shape, row.gpus, memory_bytes, local_batch=row.batch_per_gpu,
                                    min_shard_dim=row.partitioned_feature_size)
        lines.append(f"  {row.gpus:>6} GPUs: torchrec {theirs.sharding.value}, {theirs.shard.local_tables} shard(s) of "
                     f"{theirs.shard.shard_rows:,} x {theirs.shard.shard_dim} on the busiest GPU; "
                     f"{'same as' if theirs.shard == ours.shard else 'differs from'} ddlsim "
                     f"({time.perf_counter() - start:.1f} s)")
    return "\n".join(lines)


def render(title: str, rows: list[dict[str, tuple[float, float]]], markdown: bool) -> str:
    columns = list(rows[0])
    cells = [[f"{short(r[c][0])}" + ("" if r[c][1] != r[c][1] else f" / {short(r[c][1])}") for c in columns]
             for r in rows]
    lines = [f"\n{title}  (ours / paper)"]
    if markdown:
        lines += ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
        lines += ["| " + " | ".join(row) + " |" for row in cells]
    else:
        widths = [max(len(c), *(len(row[i]) for row in cells)) for i, c in enumerate(columns)]
        lines.append("  ".join(c.rjust(w) for c, w in zip(columns, widths)))
        lines += ["  ".join(v.rjust(w) for v, w in zip(row, widths)) for row in cells]
    lines.append(agreement(rows, markdown))
    return "\n".join(lines)


def agreement(rows: list[dict[str, tuple[float, float]]], markdown: bool) -> str:
    lines = ["", "| column | rows as printed | median ours/paper | range |", "|---|---|---|---|"] if markdown \
        else ["per-column agreement: rows equal to the paper as printed; median and range of ours / paper"]
    for column in rows[0]:
        pairs = [r[column] for r in rows if r[column][1] == r[column][1]]
        if not pairs:
            continue
        exact = sum(agrees_as_printed(ours, paper) for ours, paper in pairs)
        ratios = [ours / paper for ours, paper in pairs if paper]
        span = f"{min(ratios):.3g}-{max(ratios):.3g}" if ratios else "-"
        median = f"{statistics.median(ratios):.3g}" if ratios else "-"
        if markdown:
            lines.append(f"| {column} | {exact}/{len(pairs)} | {median} | {span} |")
        else:
            lines.append(f"  {column:>13}: {exact}/{len(pairs)} exact, ours/paper median {median}, range {span}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="a100_80gb", help="device whose memory the plans fill")
    parser.add_argument("--activation-offload", action="store_true", help="keep checkpoints in host memory")
    parser.add_argument("--markdown", action="store_true", help="print Markdown tables")
    parser.add_argument("--torchrec-max-gpus", type=int, default=0,
                        help="check Table 10 rows up to this many GPUs with torchrec's planner (slow)")
    args = parser.parse_args(argv)
    load_all()
    memory_bytes = DEVICES.make(args.device).memory_bytes
    parallel = ParallelConfig(activation_offload=args.activation_offload)
    start = time.perf_counter()
    print(f"device {args.device}: {memory_bytes / 2**30:g} GiB; parallel defaults: max_gpus {parallel.max_gpus}, "
          f"param limit {parallel.param_limit_per_gpu:g}/GPU, checkpointing on, "
          f"offload {'on' if args.activation_offload else 'off'}")
    print(render("Table 9 from the target loss alone", table9(parallel, memory_bytes, True), args.markdown))
    print(render("Table 9 from the paper's architecture", table9(parallel, memory_bytes, False), args.markdown))
    print(render("Table 10, local batch filling memory", table10(memory_bytes, False), args.markdown))
    print(render("Table 10, the paper's batch per GPU", table10(memory_bytes, True), args.markdown))
    print(f"\nbuilt 30 workloads in {time.perf_counter() - start:.2f} s")
    if args.torchrec_max_gpus:
        print(torchrec_check(memory_bytes, args.torchrec_max_gpus))


if __name__ == "__main__":
    main()
