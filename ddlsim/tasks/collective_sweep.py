"""`task=collective`: collective completion time over a grid of sizes and rank counts."""

from __future__ import annotations

from dataclasses import dataclass, field

from ddlsim import units
from ddlsim.errors import ConfigError
from ddlsim.network.estimate import estimate_all_reduce
from ddlsim.registry import TASKS
from ddlsim.report.table import format_table
from ddlsim.tasks.base import Components, TaskResult


@dataclass
class CollectiveTaskConfig:
    """Every (size, num_ranks) pair of the grid is one result row."""

    name: str = "collective"
    sizes: list[str] = field(default_factory=lambda: ["1MB", "1GB"])
    num_ranks: list[int] = field(default_factory=lambda: [8, 1024])


@TASKS.register("collective", CollectiveTaskConfig)
@dataclass(frozen=True)
class CollectiveSweepTask:
    """Price all-reduce over a grid of message sizes and rank counts on the chosen fabric."""

    sizes_bytes: tuple[int, ...]
    num_ranks: tuple[int, ...]

    @classmethod
    def from_config(cls, config: CollectiveTaskConfig) -> CollectiveSweepTask:
        if not config.sizes:
            raise ConfigError("sizes", config.sizes, "must list at least one size")
        for ranks in config.num_ranks:
            if ranks < 2:
                raise ConfigError("num_ranks", ranks, "every rank count must be >= 2")
        sizes = tuple(units.parse_size_bytes(size, "sizes", allow_zero=False) for size in config.sizes)
        return cls(sizes_bytes=sizes, num_ranks=tuple(config.num_ranks))

    def run(self, components: Components) -> TaskResult:
        rows = []
        for num_ranks in self.num_ranks:
            for size_bytes in self.sizes_bytes:
                estimate = estimate_all_reduce(components.fabric, components.algorithm, size_bytes, num_ranks)
                rows.append({
                    "op": estimate.op.value,
                    "fabric": estimate.fabric,
                    "algorithm": estimate.algorithm,
                    "num_ranks": num_ranks,
                    "size_bytes": size_bytes,
                    "time_s": estimate.time_s,
                    "latency_s": estimate.latency_s,
                    "transfer_s": estimate.transfer_s,
                    "compute_s": estimate.compute_s,
                    "num_steps": estimate.num_steps,
                })
        table = format_table(rows, {"fabric": str, "algorithm": str, "num_ranks": str,
                                    "size_bytes": units.format_size_bytes, "time_s": units.format_time_s,
                                    "num_steps": str})
        return TaskResult(rows=rows, summary=table)
