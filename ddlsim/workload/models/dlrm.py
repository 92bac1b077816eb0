"""`model=dlrm`: a DLRM given as RAMP Table 10 does (tables, rows, embedding width, dense
features, MLP sizes, GPUs), 3D-partitioned (table-wise, column-wise, data parallel).

Defaults are Table 10's first row: 8 tables of 10^7 rows x 4096 columns on 256 GPUs. `rows` is
per table; give `total_params` with rows = 0 to derive it (rows = total / (tables x width)).
`global_batch` 0 fills memory with the local batch; `parallel.micro_batch` fixes the local batch.
`planner: torchrec` asks torchrec's EmbeddingShardingPlanner instead (small jobs only);
`sharding` forces table-wise or column-wise placement instead of the automatic rule.
"""

from __future__ import annotations

from dataclasses import dataclass

from ddlsim.core.errors import ConfigError, InfeasibleError
from ddlsim.core.registry import MODELS
from ddlsim.core.types import Precision
from ddlsim.core.work import Workload
from ddlsim.workload.dlrm_arch import DlrmShape
from ddlsim.workload.dlrm_partition import SHARDING_CHOICES, partition_dlrm
from ddlsim.workload.dlrm_tasks import dlrm_blocks, dlrm_plan_fields
from ddlsim.workload.models.common import parse_precision
from ddlsim.workload.parallel import ParallelConfig, reject_unsupported

PLANNERS = ("ddlsim", "torchrec")


@dataclass
class DlrmConfig:
    name: str = "dlrm"
    num_tables: int = 8
    rows: int = 10_000_000
    embedding_dim: int = 4096
    total_params: float = 0.0
    dense_features: int = 16
    hidden: int = 1024
    bottom_layers: int = 4
    top_layers: int = 5
    pooling: int = 1
    num_gpus: int = 256
    global_batch: int = 0
    min_shard_dim: int = 1
    precision: str = "fp16"
    planner: str = "ddlsim"
    sharding: str = "auto"


@MODELS.register("dlrm", DlrmConfig)
@dataclass(frozen=True)
class Dlrm:
    """DLRM with embeddings sharded table-wise or column-wise and data-parallel MLPs."""

    shape: DlrmShape
    num_gpus: int
    global_batch: int
    min_shard_dim: int
    precision: Precision
    planner: str
    sharding: str = "auto"
    name: str = "dlrm"

    @classmethod
    def from_config(cls, config: DlrmConfig) -> Dlrm:
        rows = config.rows
        if rows == 0:
            if not config.total_params > 0:
                raise ConfigError("total_params", config.total_params, "must be positive when rows = 0")
            rows = round(config.total_params / (config.num_tables * config.embedding_dim))
            if rows < 1:
                raise ConfigError("total_params", config.total_params,
                                  f"gives less than one row per table of {config.embedding_dim} columns")
        for key in ("num_gpus", "global_batch"):
            if getattr(config, key) < 0:
                raise ConfigError(key, getattr(config, key), "must be >= 0 (0: num_gpus from parallel.data or "
                                                             "parallel.gpus; global_batch chosen for you)")
        if config.min_shard_dim < 1:
            raise ConfigError("min_shard_dim", config.min_shard_dim, "must be >= 1")
        if config.sharding not in SHARDING_CHOICES:
            raise ConfigError("sharding", config.sharding, f"must be one of {', '.join(SHARDING_CHOICES)}")
        if config.planner not in PLANNERS:
            raise ConfigError("planner", config.planner, f"must be one of {', '.join(PLANNERS)}")
        precision = parse_precision(config.precision)
        shape = DlrmShape(config.num_tables, rows, config.embedding_dim, config.dense_features, config.hidden,
                          config.bottom_layers, config.top_layers, config.pooling)
        return cls(shape, config.num_gpus, config.global_batch, config.min_shard_dim, precision, config.planner,
                   config.sharding, config.name)

    def world(self, parallel: ParallelConfig) -> int:
        world = parallel.data or self.num_gpus or parallel.gpus
        if not world:
            raise ConfigError("model.num_gpus", self.num_gpus, "must be >= 1 unless parallel.data or parallel.gpus "
                                                               "gives the DLRM's GPU count")
        if world > parallel.max_gpus:
            raise InfeasibleError(f"the DLRM asks for {world} GPUs but max_gpus = {parallel.max_gpus}")
        for key in ("tensor", "pipeline"):
            if getattr(parallel, key) > 1:
                raise ConfigError(f"parallel.{key}", getattr(parallel, key),
                                  "DLRM shards embeddings, not layers: tensor and pipeline degrees must be 0 or 1")
        return world

    def build_workload(self, parallel: ParallelConfig, memory_bytes: int) -> Workload:
        reject_unsupported(parallel, "dlrm", ("data", "micro_batch", "gpus"))
        if parallel.gpus and parallel.gpus != (parallel.data or self.num_gpus or parallel.gpus):
            raise ConfigError("parallel.gpus", parallel.gpus, "must equal the DLRM's GPUs (parallel.data, or "
                                                              f"model.num_gpus = {self.num_gpus})")
        world = self.world(parallel)
        if self.planner == "torchrec":
            from ddlsim.workload.torchrec_planner import torchrec_partition  # loads torch and torchrec

            plan = torchrec_partition(self.shape, world, memory_bytes, global_batch=self.global_batch,
                                      local_batch=parallel.micro_batch, min_shard_dim=self.min_shard_dim)
        else:
            plan = partition_dlrm(self.shape, world, memory_bytes, global_batch=self.global_batch,
                                  local_batch=parallel.micro_batch, min_shard_dim=self.min_shard_dim,
                                  sharding=self.sharding, value_bytes=self.precision.bytes_per_element)
        fields = dlrm_plan_fields(plan)
        fields.update({"precision": self.precision.value, "planner": self.planner})
        return Workload(name=self.name, num_ranks=world, blocks=dlrm_blocks(plan, self.precision),
                        global_batch=plan.global_batch, num_steps=0, plan=fields)
