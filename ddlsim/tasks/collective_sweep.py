"""`task=collective`: collective completion time over ops x algorithms x rank counts x sizes.

One row per point, on the configured fabric: op, fabric, algorithm (the one that ran; with
``collective=best`` the fastest), num_ranks (group size), num_groups, size_bytes, time_s,
latency_s, transfer_s, compute_s, num_steps, and algbw_bps / busbw_bps as nccl-tests define
them (algbw = size / time; busbw = algbw x 2(n-1)/n for all_reduce, (n-1)/n for reduce_scatter,
all_gather, all_to_all, gather and scatter, 1 for broadcast, reduce and send_recv). A barrier
carries no data and is priced once per rank count, with size 0. Combinations an algorithm
cannot run are skipped and listed under the summary.

Paper reproductions add (all optional, see `CollectiveTaskConfig`):

- ``algorithms``: algorithm configs (a name, or a mapping with parameters: ``{name: wrht, m: 17}``);
  rows name them by `algorithm_label` (``wrht(m=17)``). ``collectives`` gives each fabric kind its
  own list (``{superpod: [ring, hierarchical], ramp: rampx}``, `ddlsim.tasks.algorithms`);
- ``node_bandwidths`` with ``bandwidth_keys``: the fabric rebuilt at each node bandwidth, through
  the keys its kind names (RAMP Fig. 19); rows get ``node_bandwidth_bps``;
- ``gradients_of``: message sizes that are the fp32 gradients of image models
  (`ddlsim.workload.vision`: resnet50, vgg16, alexnet, beit_large; WRHT Figs. 4-7); rows get
  ``model``;
- ``reductions: false``: local reductions are not timed (WRHT's Eq. 6 has no compute term);
- ``fabric_columns``: fabric config keys copied into the rows as ``fabric_<key>`` (a swept
  ``fabric.wavelengths`` becomes the column ``fabric_wavelengths``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from ddlsim.core import units
from ddlsim.core.errors import ConfigError, InfeasibleError
from ddlsim.core.registry import TASKS
from ddlsim.core.types import CollectiveOp, GroupLayout, Precision
from ddlsim.network.estimator import CollectiveEstimator
from ddlsim.network.reduction import ReductionModel
from ddlsim.report.table import quantity_table
from ddlsim.tasks.algorithms import Choice, build_choices, build_per_fabric, check_rank_counts, choices_for, parse_ops
from ddlsim.tasks.base import Components, TaskResult
from ddlsim.tasks.fabric_variants import check_bandwidth_keys, fabric_node, parse_bandwidths, with_node_bandwidth


@dataclass
class CollectiveTaskConfig:
    """Every (algorithm, op, num_ranks, size) of the grid is one result row."""

    name: str = "collective"
    ops: list[str] = field(default_factory=lambda: ["all_reduce"])
    sizes: list[str] = field(default_factory=lambda: ["1MB", "1GB"])
    num_ranks: list[int] = field(default_factory=lambda: [8, 1024])
    algorithms: list[Any] = field(default_factory=list)
    stride: int = 1
    root: int = 0
    precision: str = "fp16"
    progress: bool = True
    collectives: dict[str, Any] = field(default_factory=dict)  # fabric kind -> algorithm config(s)
    node_bandwidths: list[str] = field(default_factory=list)
    bandwidth_keys: dict[str, Any] = field(default_factory=dict)  # fabric kind -> {key: share}
    gradients_of: list[str] = field(default_factory=list)  # image models whose fp32 gradients are the sizes
    reductions: bool = True  # time the local reductions inside collectives (WRHT's Eq. 6 does not)
    fabric_columns: list[str] = field(default_factory=list)  # fabric config keys copied into rows as fabric_<key>


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

    reads: ClassVar[tuple[str, ...]] = ("fabric", "collective", "device")

    ops: tuple[CollectiveOp, ...]
    sizes_bytes: tuple[int, ...]
    num_ranks: tuple[int, ...]
    algorithms: tuple[Choice, ...]
    stride: int
    root: int
    precision: Precision
    progress: bool
    collectives: tuple[tuple[str, tuple[Choice, ...]], ...] = ()
    node_bandwidths_bps: tuple[float, ...] = ()
    bandwidth_keys: tuple[tuple[str, tuple[tuple[str, float], ...]], ...] = ()
    size_names: tuple[str, ...] = ()  # the image model of each size, when sizes are gradients
    reductions: bool = True
    fabric_columns: tuple[str, ...] = ()

    @classmethod
    def from_config(cls, config: CollectiveTaskConfig) -> CollectiveSweepTask:
        if not config.sizes and not config.gradients_of:
            raise ConfigError("sizes", list(config.sizes), "must list at least one size")
        check_rank_counts(config.num_ranks)
        ops = parse_ops(config.ops)
        if config.stride < 1:
            raise ConfigError("stride", config.stride, "must be >= 1")
        if not 0 <= config.root < min(config.num_ranks):
            raise ConfigError("root", config.root, f"must be a rank of every group: 0 to {min(config.num_ranks) - 1} "
                                                   f"(the smallest of num_ranks is {min(config.num_ranks)})")
        if config.root and not any(op.is_rooted for op in ops):
            raise ConfigError("root", config.root, "has no effect: no op of ops has a root (broadcast, reduce, "
                                                   "gather, scatter, send_recv)")
        try:
            precision = Precision(config.precision)
        except ValueError:
            raise ConfigError("precision", config.precision,
                              f"choose from {', '.join(p.value for p in Precision)}") from None
        sizes, size_names = _sizes(config)
        keys = check_bandwidth_keys(config.bandwidth_keys)
        bandwidths = parse_bandwidths(config.node_bandwidths, "node_bandwidths")
        if bandwidths and not keys:
            raise ConfigError("bandwidth_keys", {}, "must say which keys of each fabric carry node_bandwidths")
        return cls(ops, sizes, tuple(config.num_ranks), build_choices(config.algorithms, "algorithms"),
                   config.stride, config.root, precision, config.progress,
                   tuple(build_per_fabric(config.collectives).items()), bandwidths,
                   tuple((kind, tuple(shares.items())) for kind, shares in keys.items()), size_names,
                   config.reductions, tuple(config.fabric_columns))

    def points(self, choices: tuple[Choice, ...]) -> list[tuple[Choice, CollectiveOp, int, int]]:
        grid = []
        for choice in choices:
            for op in self.ops:
                for ranks in self.num_ranks:
                    sizes = (0,) if op is CollectiveOp.BARRIER else self.sizes_bytes
                    grid.extend((choice, op, ranks, size) for size in sizes)
        return grid

    def fabrics(self, components: Components) -> list[tuple[Any, dict[str, Any]]]:
        """The fabric to price on, with the columns that say which (one per node bandwidth)."""
        node = fabric_node(components.config)
        missing = [key for key in self.fabric_columns if key not in node]
        if missing:
            raise ConfigError("fabric_columns", missing, f"are not keys of fabric {node['name']}")
        described = {f"fabric_{key}": node[key] for key in self.fabric_columns}
        if not self.node_bandwidths_bps:
            return [(components.fabric, described)]
        keys = {kind: dict(shares) for kind, shares in self.bandwidth_keys}
        return [(with_node_bandwidth(node, bandwidth, keys), {**described, "node_bandwidth_bps": bandwidth})
                for bandwidth in self.node_bandwidths_bps]

    def run(self, components: Components) -> TaskResult:
        from tqdm import tqdm

        device = components.device
        model = ReductionModel(device.peak(self.precision), device.memory_bandwidth_bps,
                               self.precision.bytes_per_element, device.name) if self.reductions else None
        choices = choices_for(components.config, components.fabric.name, dict(self.collectives), self.algorithms,
                              components.algorithm)
        size_names = dict(zip(self.sizes_bytes, self.size_names, strict=False))
        rows: list[dict[str, Any]] = []
        skipped: list[str] = []
        for fabric, columns in self.fabrics(components):
            estimators: dict[int, CollectiveEstimator] = {}
            points = self.points(choices)
            for choice, op, ranks, size in tqdm(points, desc="collectives", unit="point",
                                                disable=not self.progress or len(points) < 50 or None):
                if id(choice) not in estimators:
                    estimators[id(choice)] = CollectiveEstimator(fabric, choice.algorithm, model)
                estimator = estimators[id(choice)]
                if op is CollectiveOp.SEND_RECV and ranks != 2:
                    skipped.append(f"{op.value} x {ranks} ranks: send_recv needs 2 ranks")
                    continue
                layout = GroupLayout(size=ranks, stride=self.stride, num_ranks=ranks * self.stride)
                try:
                    estimate = estimator.estimate(op, size, layout=layout, root=self.root)
                except InfeasibleError as error:
                    skipped.append(str(error))
                    continue
                named = {"model": size_names[size]} if size in size_names else {}
                rows.append({**_row(estimate, layout, choice), **columns, **named})
        if not rows:
            raise InfeasibleError("no point of the sweep could be priced: " + "; ".join(skipped[:5]))
        return TaskResult(rows=rows, summary=_summary(rows, skipped))


def _sizes(config: CollectiveTaskConfig) -> tuple[tuple[int, ...], tuple[str, ...]]:
    """The message sizes: `sizes`, or the fp32 gradients of the image models `gradients_of`."""
    if not config.gradients_of:
        return tuple(units.parse_size_bytes(size, "sizes") for size in config.sizes), ()
    if config.sizes:
        raise ConfigError("gradients_of", list(config.gradients_of), "give sizes or gradients_of, not both")
    from ddlsim.workload.vision import gradient_bytes

    sizes = tuple(gradient_bytes(name) for name in config.gradients_of)
    return sizes, tuple(config.gradients_of)


def _row(estimate, layout: GroupLayout, choice: Choice) -> dict[str, Any]:
    algbw = units.bytes_to_bits(estimate.size_bytes) / estimate.time_s if estimate.time_s > 0 else 0.0
    selector = getattr(choice.algorithm, "is_selector", False)
    return {
        "op": estimate.op.value,
        "fabric": estimate.fabric,
        "algorithm": estimate.algorithm if selector else choice.label,
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
