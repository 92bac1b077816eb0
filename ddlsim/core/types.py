"""The small shared vocabulary the rooms speak: collective ops, group layouts, tasks, estimates.

`workload/` produces `ComputeTask` and `CollectiveCall` records; `network/` and `compute/` turn
them into `CollectiveEstimate` and `ComputeEstimate`; `training/` combines both. None of those
rooms imports another to exchange these records: they all import this module.

Sizes follow the nccl-tests convention (see `CollectiveCall`). Records are frozen and check
themselves on construction, raising `ConfigError` with the offending field.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from enum import StrEnum

from ddlsim.core.errors import ConfigError


class CollectiveOp(StrEnum):
    ALL_REDUCE = "all_reduce"
    REDUCE_SCATTER = "reduce_scatter"
    ALL_GATHER = "all_gather"
    ALL_TO_ALL = "all_to_all"
    BROADCAST = "broadcast"
    REDUCE = "reduce"
    GATHER = "gather"
    SCATTER = "scatter"
    BARRIER = "barrier"
    SEND_RECV = "send_recv"

    @classmethod
    def from_config(cls, value: str, key: str) -> CollectiveOp:
        """The op named `value`, or a `ConfigError` on `key` listing the ops."""
        try:
            return cls(value)
        except ValueError:
            raise ConfigError(key, value, f"unknown op; choose from {', '.join(op.value for op in cls)}") from None

    @property
    def is_rooted(self) -> bool:
        """True for ops with a distinguished root rank (or a sender, for send/recv)."""
        return self in _ROOTED

    @property
    def reduces(self) -> bool:
        """True for ops that combine data arithmetically (a local reduction cost applies)."""
        return self in _REDUCING

    def input_bytes(self, size_bytes: int, group_size: int, *, is_root: bool = True) -> float:
        """Bytes one rank contributes, under the nccl-tests convention for `size_bytes`."""
        if self in (CollectiveOp.ALL_GATHER, CollectiveOp.GATHER):
            return size_bytes / group_size
        if self in (CollectiveOp.BROADCAST, CollectiveOp.SCATTER, CollectiveOp.SEND_RECV):
            return size_bytes if is_root else 0
        if self is CollectiveOp.BARRIER:
            return 0
        return size_bytes

    def output_bytes(self, size_bytes: int, group_size: int, *, is_root: bool = True) -> float:
        """Bytes one rank holds afterwards, under the nccl-tests convention for `size_bytes`."""
        if self in (CollectiveOp.REDUCE_SCATTER, CollectiveOp.SCATTER):
            return size_bytes / group_size
        if self in (CollectiveOp.REDUCE, CollectiveOp.GATHER):
            return size_bytes if is_root else 0
        if self is CollectiveOp.SEND_RECV:
            return 0 if is_root else size_bytes
        if self is CollectiveOp.BARRIER:
            return 0
        return size_bytes


_ROOTED = frozenset({CollectiveOp.BROADCAST, CollectiveOp.REDUCE, CollectiveOp.GATHER,
                     CollectiveOp.SCATTER, CollectiveOp.SEND_RECV})
_REDUCING = frozenset({CollectiveOp.ALL_REDUCE, CollectiveOp.REDUCE_SCATTER, CollectiveOp.REDUCE})


class Phase(StrEnum):
    FORWARD = "forward"
    RECOMPUTE = "recompute"
    BACKWARD = "backward"
    OPTIMIZER = "optimizer"


class Precision(StrEnum):
    FP32 = "fp32"
    TF32 = "tf32"
    FP16 = "fp16"
    BF16 = "bf16"
    FP8 = "fp8"

    @property
    def bytes_per_element(self) -> int:
        return {"fp32": 4, "tf32": 4, "fp16": 2, "bf16": 2, "fp8": 1}[self.value]


class ComputeSource(StrEnum):
    MEASURED = "measured"
    SCALED = "scaled"
    ROOFLINE = "roofline"


def _require(condition: bool, key: str, value: object, rule: str) -> None:
    if not condition:
        raise ConfigError(key, value, rule)


@dataclass(frozen=True)
class GroupLayout:
    """Every communication group of one kind inside a job of `num_ranks` ranks.

    One group is ``size`` ranks spaced ``stride`` apart: with 64 ranks, a tensor-parallel group
    of 8 consecutive ranks is ``GroupLayout(size=8, stride=1, num_ranks=64)`` and the matching
    data-parallel groups (ranks 0, 8, 16, ...) are ``GroupLayout(size=8, stride=8, num_ranks=64)``.
    All ``num_groups`` groups of a layout run at the same time, so a fabric pricing one of them
    must account for the others sharing its links.
    """

    size: int
    stride: int = 1
    num_ranks: int | None = None

    def __post_init__(self) -> None:
        _require(isinstance(self.size, int) and self.size >= 1, "group.size", self.size, "must be an integer >= 1")
        _require(isinstance(self.stride, int) and self.stride >= 1, "group.stride", self.stride,
                 "must be an integer >= 1")
        if self.num_ranks is None:
            object.__setattr__(self, "num_ranks", self.size * self.stride)
        span = self.size * self.stride
        _require(isinstance(self.num_ranks, int) and self.num_ranks >= 1 and self.num_ranks % span == 0,
                 "group.num_ranks", self.num_ranks,
                 f"must be a positive multiple of size x stride = {self.size} x {self.stride} = {span}")

    @property
    def job_ranks(self) -> int:
        assert self.num_ranks is not None
        return self.num_ranks

    @property
    def num_groups(self) -> int:
        return self.job_ranks // self.size

    def ranks(self, group_index: int = 0) -> tuple[int, ...]:
        """The job ranks of group `group_index` (0 <= index < num_groups), in group order."""
        _require(0 <= group_index < self.num_groups, "group_index", group_index,
                 f"must be in [0, {self.num_groups})")
        span = self.size * self.stride
        block, offset = divmod(group_index, self.stride)
        base = block * span + offset
        return tuple(base + i * self.stride for i in range(self.size))

    def groups(self) -> Iterator[tuple[int, ...]]:
        for index in range(self.num_groups):
            yield self.ranks(index)

    def position(self, rank: int) -> tuple[int, int]:
        """(group index, position inside the group) of job rank `rank`."""
        _require(0 <= rank < self.job_ranks, "rank", rank, f"must be in [0, {self.job_ranks})")
        span = self.size * self.stride
        block, within = divmod(rank, span)
        position, offset = divmod(within, self.stride)
        return block * self.stride + offset, position


@dataclass(frozen=True)
class CollectiveCall:
    """One collective that every group of `group` runs, `count` times in a row.

    `size_bytes` follows the nccl-tests convention: the whole buffer each rank holds, that is
    the input of all_reduce, reduce_scatter, all_to_all, broadcast and reduce, the output of
    all_gather and gather, the root's input of scatter, the bytes sent by send_recv, and 0 for
    barrier. `CollectiveOp.input_bytes` and `output_bytes` give the per-rank figures.
    """

    op: CollectiveOp
    size_bytes: int
    group: GroupLayout
    phase: Phase = Phase.FORWARD
    name: str = ""
    count: int = 1
    root: int = 0

    def __post_init__(self) -> None:
        object.__setattr__(self, "op", CollectiveOp(self.op))
        object.__setattr__(self, "phase", Phase(self.phase))
        _require(isinstance(self.size_bytes, int) and self.size_bytes >= 0, "size_bytes", self.size_bytes,
                 "must be an integer >= 0")
        _require(isinstance(self.count, int) and self.count >= 1, "count", self.count, "must be an integer >= 1")
        _require(0 <= self.root < self.group.size, "root", self.root, f"must be in [0, {self.group.size})")
        if self.op is CollectiveOp.SEND_RECV:
            _require(self.group.size == 2, "group.size", self.group.size, "send_recv needs a group of 2")


@dataclass(frozen=True)
class ShardSignature:
    """What identifies one rank's compute shard for profiling: the key of a profile row."""

    model_kind: str
    shape: tuple[tuple[str, int], ...]
    local_batch: int
    precision: Precision = Precision.FP16
    checkpointing: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "precision", Precision(self.precision))
        object.__setattr__(self, "shape", tuple(sorted((str(k), int(v)) for k, v in dict(self.shape).items())))
        _require(self.local_batch >= 1, "local_batch", self.local_batch, "must be >= 1")

    @property
    def shape_dict(self) -> dict[str, int]:
        return dict(self.shape)

    def key(self) -> str:
        """A stable text key, e.g. ``megatron|d_model=1024,heads=16|b=8|fp16|ckpt``."""
        shape = ",".join(f"{k}={v}" for k, v in self.shape)
        ckpt = "ckpt" if self.checkpointing else "nockpt"
        return f"{self.model_kind}|{shape}|b={self.local_batch}|{self.precision.value}|{ckpt}"


@dataclass(frozen=True)
class ComputeTask:
    """Work one rank does between collectives: `flop` and `memory_bytes` moved, `count` times."""

    name: str
    phase: Phase
    signature: ShardSignature
    flop: float
    memory_bytes: float = 0.0
    count: int = 1

    def __post_init__(self) -> None:
        object.__setattr__(self, "phase", Phase(self.phase))
        _require(math.isfinite(self.flop) and self.flop >= 0, "flop", self.flop, "must be finite and >= 0")
        _require(math.isfinite(self.memory_bytes) and self.memory_bytes >= 0, "memory_bytes", self.memory_bytes,
                 "must be finite and >= 0")
        _require(isinstance(self.count, int) and self.count >= 1, "count", self.count, "must be an integer >= 1")


class KernelClass(StrEnum):
    """The kinds of GPU kernel both front doors describe compute in (docs/compute.md).

    One pricing path (`ddlsim.compute.kernel_roofline`) turns a kernel of any class into time:
    GEMMs and grouped GEMMs by their tile shape, flash attention by its published per-shape
    throughput, everything else by the bytes it streams. ``host`` is a framework call that
    launches no GPU kernel (the issue of a collective): it costs host time only.
    """

    GEMM = "gemm"
    GROUPED_GEMM = "grouped_gemm"
    ATTENTION_FORWARD = "attention_forward"
    ATTENTION_BACKWARD = "attention_backward"
    ELEMENTWISE = "elementwise"
    NORM = "norm"
    ACTIVATION = "activation"
    EMBEDDING = "embedding"
    LOSS = "loss"
    OPTIMIZER = "optimizer"
    HOST = "host"

    @property
    def is_gemm(self) -> bool:
        return self in (KernelClass.GEMM, KernelClass.GROUPED_GEMM)

    @property
    def is_attention(self) -> bool:
        return self in (KernelClass.ATTENTION_FORWARD, KernelClass.ATTENTION_BACKWARD)


@dataclass(frozen=True)
class Kernel:
    """One GPU kernel of a compute task: its class, FLOPs, DRAM bytes and shape.

    GEMM (``m x n x k``, `batch` of them) and grouped GEMM (`batch` groups of ``m x n x k``,
    ``m`` the tokens of one group); flash attention: ``m`` queries and ``n`` keys per sequence
    and head, head dimension ``k``, ``batch`` = sequences x heads, `causal` when the kernel skips
    the masked half (its `flop` already counts only the work done); other classes: `bytes`.
    `launches` counts the framework operations the host issues for it.
    """

    name: str
    flop: float = 0.0
    bytes: float = 0.0
    m: int = 0
    n: int = 0
    k: int = 0
    batch: int = 1
    launches: int = 1
    on_device: bool = True
    kernel_class: KernelClass = KernelClass.ELEMENTWISE
    causal: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "kernel_class", KernelClass(self.kernel_class))
        if self.flop < 0 or self.bytes < 0 or self.launches < 0 or self.batch < 1:
            raise ConfigError(f"kernel[{self.name}]", (self.flop, self.bytes, self.launches),
                              "flop, bytes and launches must be >= 0 and batch >= 1")
        if not self.on_device or self.kernel_class is KernelClass.HOST:
            object.__setattr__(self, "kernel_class", KernelClass.HOST)
            object.__setattr__(self, "on_device", False)

    @property
    def is_gemm(self) -> bool:
        return self.kernel_class.is_gemm


Task = ComputeTask | CollectiveCall


@dataclass(frozen=True)
class TaskBlock:
    """A sequence of tasks that runs `repeat` times back to back (e.g. one transformer layer).

    For pipelined workloads (plan ``pp_degree`` > 1 or ``micro_batches`` > 1), `stages` names
    the pipeline stages that run the block (empty: every stage) and `per_micro_batch` says
    that the block runs once per micro-batch rather than once per iteration; the 1F1B schedule
    (`ddlsim.training.pipeline`) reads both. Other schedules ignore them.
    """

    name: str
    tasks: tuple[Task, ...]
    repeat: int = 1
    stages: tuple[int, ...] = ()
    per_micro_batch: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "tasks", tuple(self.tasks))
        _require(isinstance(self.repeat, int) and self.repeat >= 1, "repeat", self.repeat, "must be an integer >= 1")
        object.__setattr__(self, "stages", tuple(self.stages))
        _require(all(isinstance(stage, int) and stage >= 0 for stage in self.stages)
                 and list(self.stages) == sorted(set(self.stages)), "stages", self.stages,
                 "must be distinct stage indices >= 0 in increasing order")

    def runs_on(self, stage: int) -> bool:
        """True if pipeline stage `stage` runs this block."""
        return not self.stages or stage in self.stages


@dataclass(frozen=True)
class Workload:
    """One training iteration of one job, as every rank sees it, built without any fabric in mind.

    `plan` carries the partitioner's choices as result-row fields (``tp_degree``, ...);
    `num_steps` is the number of iterations to reach the target (0 when unknown).
    """

    name: str
    num_ranks: int
    blocks: tuple[TaskBlock, ...]
    global_batch: int = 1
    num_steps: int = 0
    plan: Mapping[str, object] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "blocks", tuple(self.blocks))
        _require(self.num_ranks >= 1, "num_ranks", self.num_ranks, "must be >= 1")
        _require(self.global_batch >= 1, "global_batch", self.global_batch, "must be >= 1")
        _require(self.num_steps >= 0, "num_steps", self.num_steps, "must be >= 0")

    def collective_calls(self) -> Iterator[CollectiveCall]:
        for block in self.blocks:
            for task in block.tasks:
                if isinstance(task, CollectiveCall):
                    yield task

    def compute_tasks(self) -> Iterator[ComputeTask]:
        for block in self.blocks:
            for task in block.tasks:
                if isinstance(task, ComputeTask):
                    yield task


def _check_times(record: object, *names: str) -> None:
    for name in names:
        value = getattr(record, name)
        _require(math.isfinite(value) and value >= 0, name, value, "must be finite and >= 0")


@dataclass(frozen=True)
class CollectiveEstimate:
    """How long one collective takes on one fabric, and what that time is made of.

    `lower_bound_s` is the physical lower bound of the call (`ddlsim.network.bounds`): the
    estimator never returns a `time_s` below it (0 when no bound was computed).
    """

    op: CollectiveOp
    size_bytes: int
    group_size: int
    algorithm: str
    fabric: str
    time_s: float
    latency_s: float
    transfer_s: float
    compute_s: float
    num_steps: int
    lower_bound_s: float = 0.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "op", CollectiveOp(self.op))
        _check_times(self, "time_s", "latency_s", "transfer_s", "compute_s", "lower_bound_s")
        _require(self.num_steps >= 0, "num_steps", self.num_steps, "must be >= 0")


@dataclass(frozen=True)
class ComputeEstimate:
    """How long one compute task takes on one device, and where the number came from."""

    time_s: float
    source: ComputeSource
    device: str

    def __post_init__(self) -> None:
        object.__setattr__(self, "source", ComputeSource(self.source))
        _check_times(self, "time_s")


@dataclass(frozen=True)
class NetworkCost:
    """Equipment cost and power of the network a job runs on (RAMP Section 4.3, Tables 3 and 4).

    `scope` says what the figures cover: ``"job"`` (the share of the fabric the job's ranks use)
    or ``"fabric"`` (the whole fabric). `components` counts items by kind (``"transceivers"``,
    ``"switches"``, ``"couplers"``, ...). Training turns ``power_w`` x iteration time into the
    network energy of an iteration.
    """

    capex_usd: float
    power_w: float
    scope: str = "job"
    components: Mapping[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        _require(math.isfinite(self.capex_usd) and self.capex_usd >= 0, "capex_usd", self.capex_usd,
                 "must be finite and >= 0")
        _require(math.isfinite(self.power_w) and self.power_w >= 0, "power_w", self.power_w,
                 "must be finite and >= 0")
        _require(self.scope in ("job", "fabric"), "scope", self.scope, "must be 'job' or 'fabric'")
        object.__setattr__(self, "components", dict(self.components))
        for kind, count in self.components.items():
            _require(math.isfinite(count) and count >= 0, f"components.{kind}", count, "must be finite and >= 0")
