"""`task=ramp_tables`: RAMP Tables 9 (Megatron) and 10 (DLRM) rebuilt by ddlsim's partitioners.

Table 9 is built twice: from the target loss alone (the scaling laws choose the shape,
``table9_loss``) and from the paper's architecture (d_model, heads, layers; ``table9_architecture``).
Table 10 is built from its inputs, once with the local batch that fills memory (``table10_fill``)
and once with the paper's batch per GPU (``table10_paper_batch``). The paper's rows come from
`configs/reference/papers.yaml` (`ddlsim.workload.ramp_reference`); the device's memory and the
``parallel`` group (``parallel=offload``: RAMP 7.3's offloaded checkpoints, Table 9 only) shape the plans.

One row per (table, paper row, column): ``ours``, ``paper`` (NaN where the paper prints none) and
``agrees_as_printed`` (ours printed to the paper's digits, rounded or truncated, is the paper's).
``experiment=ramp_tables_9_10`` reports them as tables beside the paper with the per-column agreement.
``task.torchrec_max_gpus`` also asks torchrec's planner for the Table 10 rows up to that many GPUs.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar

from ddlsim.core.errors import ConfigError
from ddlsim.core.registry import MODELS, TASKS
from ddlsim.tasks.base import Components, Row, TaskResult

TABLES = ("table9_loss", "table9_architecture", "table10_fill", "table10_paper_batch")
NAN = float("nan")


@dataclass
class RampTablesTaskConfig:
    name: str = "ramp_tables"
    tables: list[str] = field(default_factory=lambda: list(TABLES))
    torchrec_max_gpus: int = 0


def table9(parallel: Any, memory_bytes: int, from_loss: bool) -> list[dict[str, tuple[float, float]]]:
    from ddlsim.workload.ramp_reference import TABLE9

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


def table10(parallel: Any, memory_bytes: int, paper_batch: bool) -> list[dict[str, tuple[float, float]]]:
    from ddlsim.workload.ramp_reference import TABLE10

    rows = []
    for row in TABLE10:
        model = MODELS.make("dlrm", num_tables=row.tables, rows=int(row.rows_total) // row.tables,
                            embedding_dim=row.sparse_feature_size, dense_features=row.dense_features,
                            hidden=row.mlp_hidden, bottom_layers=row.bottom_layers, top_layers=row.top_layers,
                            num_gpus=row.gpus)
        # RAMP 7.3 offloads Megatron's activation checkpoints; a DLRM has none, so Table 10 ignores it.
        plan = model.build_workload(replace(parallel, micro_batch=row.batch_per_gpu if paper_batch else 0,
                                            activation_offload=False), memory_bytes).plan
        rows.append({
            "GPUs": (plan["num_gpus"], row.gpus), "tables": (plan["num_tables"], row.tables),
            "part. feature": (plan["shard_dim"], row.partitioned_feature_size),
            "batch/GPU": (plan["local_batch"], row.batch_per_gpu), "params": (plan["params_total"], row.params),
            "part. params": (plan["params_per_gpu"], row.params_per_gpu),
            "all-to-all B": (plan["all_to_all_bytes"], NAN),
            "all-reduce B": (plan["dp_message_bytes"], NAN),
        })
    return rows


def torchrec_check(memory_bytes: int, max_gpus: int) -> str:
    """torchrec's planner on the Table 10 rows of at most `max_gpus` GPUs, column width as in the paper."""
    from ddlsim.workload.dlrm_arch import DlrmShape
    from ddlsim.workload.dlrm_partition import partition_dlrm
    from ddlsim.workload.ramp_reference import TABLE10
    from ddlsim.workload.torchrec_planner import torchrec_partition

    lines = ["Table 10 placement by torchrec's EmbeddingShardingPlanner (min_partition = the paper's width)"]
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


@TASKS.register("ramp_tables", RampTablesTaskConfig)
@dataclass(frozen=True)
class RampTablesTask:
    """RAMP Tables 9 and 10 rebuilt by ddlsim's partitioners, cell by cell beside the paper."""

    reads: ClassVar[tuple[str, ...]] = ("parallel", "device")  # its own Megatron and DLRM models

    tables: tuple[str, ...] = TABLES
    torchrec_max_gpus: int = 0
    name: str = "ramp_tables"

    @classmethod
    def from_config(cls, config: RampTablesTaskConfig) -> RampTablesTask:
        unknown = [table for table in config.tables if table not in TABLES]
        if unknown or not config.tables:
            raise ConfigError("tables", list(config.tables), f"must list some of {', '.join(TABLES)}")
        if config.torchrec_max_gpus < 0:
            raise ConfigError("torchrec_max_gpus", config.torchrec_max_gpus, "must be >= 0")
        return cls(tuple(config.tables), config.torchrec_max_gpus)

    def run(self, components: Components) -> TaskResult:
        from ddlsim.workload.ramp_reference import agrees_as_printed

        memory_bytes = components.device.memory_bytes
        parallel = components.parallel
        build = {"table9_loss": lambda: table9(parallel, memory_bytes, True),
                 "table9_architecture": lambda: table9(parallel, memory_bytes, False),
                 "table10_fill": lambda: table10(parallel, memory_bytes, False),
                 "table10_paper_batch": lambda: table10(parallel, memory_bytes, True)}
        rows: list[Row] = []
        for table in self.tables:
            for index, cells in enumerate(build[table]()):
                for column, (ours, paper) in cells.items():
                    rows.append({"table": table, "row": index, "column": column, "ours": float(ours),
                                 "paper": float(paper), "device": str(components.device.name),
                                 "activation_offload": bool(parallel.activation_offload) and table.startswith("table9"),
                                 "agrees_as_printed": paper == paper and agrees_as_printed(ours, paper),
                                 "status": "ok"})
        summary = f"{len(rows)} cells of RAMP Tables 9 and 10 rebuilt on {components.device.name}"
        if self.torchrec_max_gpus:
            summary += "\n" + torchrec_check(memory_bytes, self.torchrec_max_gpus)
        return TaskResult(rows=rows, summary=summary)
