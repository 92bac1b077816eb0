"""The work of one training iteration: compute tasks, the kernels they run, blocks and workloads.

`workload/` builds a `Workload` of `TaskBlock`s, each a run of `ComputeTask`s and
`CollectiveCall`s (`ddlsim.core.types`); `compute/` prices a task's `Kernel`s. Records are frozen
and check themselves on construction, raising `ConfigError` with the offending field.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from enum import StrEnum

from ddlsim.core.errors import ConfigError
from ddlsim.core.types import CollectiveCall, Phase, Precision, _require


def _normal_shape(shape: object) -> bool:
    """True when `shape` is already what `ShardSignature` makes of it: a tuple of (str, int) pairs
    in increasing key order (so no key twice)."""
    if type(shape) is not tuple:
        return False
    previous = None
    for item in shape:
        if type(item) is not tuple or len(item) != 2 or type(item[0]) is not str or type(item[1]) is not int:
            return False
        if previous is not None and not previous < item[0]:
            return False
        previous = item[0]
    return True


@dataclass(frozen=True)
class ShardSignature:
    """What identifies one rank's compute shard for profiling: the key of a profile row."""

    model_kind: str
    shape: tuple[tuple[str, int], ...]
    local_batch: int
    precision: Precision = Precision.FP16
    checkpointing: bool = False

    def __post_init__(self) -> None:
        if type(self.precision) is not Precision:
            object.__setattr__(self, "precision", Precision(self.precision))
        if not _normal_shape(self.shape):
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
        if type(self.phase) is not Phase:
            object.__setattr__(self, "phase", Phase(self.phase))
        flop, memory_bytes, count = self.flop, self.memory_bytes, self.count
        # the checks below, for the floats and int every builder passes; anything else takes them
        if (type(flop) is float and type(memory_bytes) is float and type(count) is int
                and 0.0 <= flop < math.inf and 0.0 <= memory_bytes < math.inf and count >= 1):
            return
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


def _increasing(stages: tuple) -> bool:
    """True when `stages` are ints >= 0 in strictly increasing order (what `TaskBlock` requires)."""
    previous = -1
    for stage in stages:
        if type(stage) is not int or stage <= previous:
            return False
        previous = stage
    return True


@dataclass(frozen=True)
class TaskBlock:
    """A sequence of tasks that runs `repeat` times back to back (e.g. one transformer layer).

    For pipelined workloads (plan ``pp_degree`` > 1 or ``micro_batches`` > 1), `stages` names
    the pipeline stages that run the block (empty: every stage) and `per_micro_batch` says
    that the block runs once per micro-batch rather than once per iteration; the 1F1B schedule
    (`ddlsim.training.schedules.one_f_one_b`) reads both. Other schedules ignore them.
    """

    name: str
    tasks: tuple[Task, ...]
    repeat: int = 1
    stages: tuple[int, ...] = ()
    per_micro_batch: bool = False

    def __post_init__(self) -> None:
        if type(self.tasks) is not tuple:
            object.__setattr__(self, "tasks", tuple(self.tasks))
        if not (type(self.repeat) is int and self.repeat >= 1):
            _require(isinstance(self.repeat, int) and self.repeat >= 1, "repeat", self.repeat,
                     "must be an integer >= 1")
        if type(self.stages) is not tuple:
            object.__setattr__(self, "stages", tuple(self.stages))
        if _increasing(self.stages):
            return  # the check below, for stages of type int
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
