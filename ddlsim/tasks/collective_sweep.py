"""`task=collective`: collective completion time over ops x algorithms x rank counts x sizes.

One row per point, on the configured fabric: op, fabric, algorithm (the one that ran; with
``collective=best`` the fastest), num_ranks (group size), num_groups, size_bytes, time_s,
latency_s, transfer_s, compute_s, num_steps, and algbw_bps / busbw_bps as nccl-tests define
them (algbw = size / time; busbw = algbw x 2(n-1)/n for all_reduce, (n-1)/n for reduce_scatter,
all_gather, all_to_all, gather and scatter, 1 for broadcast, reduce and send_recv). A barrier
carries no data and is priced once per rank count, with size 0. Combinations an algorithm
cannot run are skipped and listed under the summary.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ddlsim import units
from ddlsim.errors import ConfigError, InfeasibleError
from ddlsim.network.estimator import CollectiveEstimator, make_algorithm
from ddlsim.network.reduction import ReductionModel
from ddlsim.registry import ALGORITHMS, TASKS
from ddlsim.report.table import quantity_table
from ddlsim.tasks.base import Components, TaskResult
from ddlsim.types import CollectiveOp, GroupLayout, Precision


@dataclass
class CollectiveTaskConfig:
    """Every (algorithm, op, num_ranks, size) of the grid is one result row."""

    name: str = "collective"
    ops: list[str] = field(default_factory=lambda: ["all_reduce"])
    sizes: list[str] = field(default_factory=lambda: ["1MB", "1GB"])
    num_ranks: list[int] = field(default_factory=lambda: [8, 1024])
    algorithms: list[str] = field(default_factory=list)
    stride: int = 1
    root: int = 0
    precision: str = "fp16"
    progress: bool = True


def bus_factor(op: CollectiveOp, group_size: int) -> float:
    """nccl-tests' bus bandwidth factor: busbw = algbw x factor."""
    n = group_size
    if op is CollectiveOp.ALL_REDUCE:
        return 2 * (n - 1) / n
    if op in (CollectiveOp.REDUCE_SCATTER, CollectiveOp.ALL_GATHER, CollectiveOp.ALL_TO_ALL,
              CollectiveOp.GATHER, CollectiveOp.SCATTER):
        return (n - 1) / n
    if op is CollectiveOp.BARRIER:
        return 0.0
    return 1.0


@TASKS.register("collective", CollectiveTaskConfig)
@dataclass(frozen=True)
class CollectiveSweepTask:
    """Price collectives over a grid of ops, algorithms, rank counts and sizes on the chosen fabric."""

    ops: tuple[CollectiveOp, ...]
    sizes_bytes: tuple[int, ...]
    num_ranks: tuple[int, ...]
    algorithms: tuple[str, ...]
    stride: int
    root: int
    precision: Precision
    progress: bool

    @classmethod
    def from_config(cls, config: CollectiveTaskConfig) -> CollectiveSweepTask:
        if not config.sizes:
            raise ConfigError("sizes", list(config.sizes), "must list at least one size")
        if not config.num_ranks or any(ranks < 1 for ranks in config.num_ranks):
            raise ConfigError("num_ranks", list(config.num_ranks), "must list rank counts >= 1")
        ops = []
        for op in config.ops:
            try:
                ops.append(CollectiveOp(op))
            except ValueError:
                raise ConfigError("ops", op, f"unknown op; choose from {', '.join(o.value for o in CollectiveOp)}"
                                  ) from None
        if not ops:
            raise ConfigError("ops", [], "must list at least one op")
        for name in config.algorithms:
            if name not in ALGORITHMS:
                raise ConfigError("algorithms", name, f"unknown algorithm; choose from {', '.join(ALGORITHMS.names())}")
        if config.stride < 1:
            raise ConfigError("stride", config.stride, "must be >= 1")
        if config.root < 0:
            raise ConfigError("root", config.root, "must be >= 0")
        try:
            precision = Precision(config.precision)
        except ValueError:
            raise ConfigError("precision", config.precision,
                              f"choose from {', '.join(p.value for p in Precision)}") from None
        sizes = tuple(units.parse_size_bytes(size, "sizes") for size in config.sizes)
        return cls(tuple(ops), sizes, tuple(config.num_ranks), tuple(config.algorithms), config.stride, config.root,
                   precision, config.progress)

    def points(self) -> list[tuple[str | None, CollectiveOp, int, int]]:
        algorithms: tuple[str | None, ...] = self.algorithms or (None,)
        grid = []
        for algorithm in algorithms:
            for op in self.ops:
                for ranks in self.num_ranks:
                    sizes = (0,) if op is CollectiveOp.BARRIER else self.sizes_bytes
                    grid.extend((algorithm, op, ranks, size) for size in sizes)
        return grid

    def run(self, components: Components) -> TaskResult:
        from tqdm import tqdm

        device = components.device
        model = ReductionModel(device.peak(self.precision), device.memory_bandwidth_bps,
                               self.precision.bytes_per_element, device.name)
        estimators: dict[str | None, CollectiveEstimator] = {}
        rows: list[dict[str, Any]] = []
        skipped: list[str] = []
        points = self.points()
        for algorithm, op, ranks, size in tqdm(points, desc="collectives", unit="point",
                                               disable=not self.progress or len(points) < 50 or None):
            if algorithm not in estimators:
                chosen = components.algorithm if algorithm is None else make_algorithm(algorithm)
                estimators[algorithm] = CollectiveEstimator(components.fabric, chosen, model)
            estimator = estimators[algorithm]
            if op is CollectiveOp.SEND_RECV and ranks != 2:
                skipped.append(f"{op.value} x {ranks} ranks: send_recv needs 2 ranks")
                continue
            layout = GroupLayout(size=ranks, stride=self.stride, num_ranks=ranks * self.stride)
            try:
                estimate = estimator.estimate(op, size, layout=layout, root=min(self.root, ranks - 1))
            except InfeasibleError as error:
                skipped.append(str(error))
                continue
            rows.append(_row(estimate, layout))
        if not rows:
            raise InfeasibleError("no point of the sweep could be priced: " + "; ".join(skipped[:5]))
        return TaskResult(rows=rows, summary=_summary(rows, skipped))


def _row(estimate, layout: GroupLayout) -> dict[str, Any]:
    algbw = units.bytes_to_bits(estimate.size_bytes) / estimate.time_s if estimate.time_s > 0 else 0.0
    return {
        "op": estimate.op.value,
        "fabric": estimate.fabric,
        "algorithm": estimate.algorithm,
        "num_ranks": estimate.group_size,
        "num_groups": layout.num_groups,
        "size_bytes": estimate.size_bytes,
        "time_s": estimate.time_s,
        "latency_s": estimate.latency_s,
        "transfer_s": estimate.transfer_s,
        "compute_s": estimate.compute_s,
        "num_steps": estimate.num_steps,
        "algbw_bps": algbw,
        "busbw_bps": algbw * bus_factor(estimate.op, estimate.group_size),
    }


def _summary(rows: list[dict[str, Any]], skipped: list[str]) -> str:
    table = quantity_table(rows, {"op": None, "fabric": None, "algorithm": None, "num_ranks": None,
                                  "size_bytes": "size_bytes", "time_s": "time_s", "latency_s": "time_s",
                                  "transfer_s": "time_s", "compute_s": "time_s", "num_steps": None,
                                  "busbw_bps": "bandwidth_bps"},
                           {"size_bytes": "size", "time_s": "time", "latency_s": "latency", "transfer_s": "transfer",
                            "compute_s": "compute", "busbw_bps": "busbw"})
    if skipped:
        table += f"\nskipped {len(skipped)} point(s):\n" + "\n".join(f"  {line}" for line in dict.fromkeys(skipped))
    return table
