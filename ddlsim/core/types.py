"""The small shared vocabulary the rooms speak: collective ops, group layouts, calls, estimates.

`workload/` produces `ComputeTask` (`ddlsim.core.work`) and `CollectiveCall` records;
`network/` and `compute/` turn them into `CollectiveEstimate` and `ComputeEstimate`;
`training/` combines both. None of those rooms imports another to exchange these records: they
all import this module and `ddlsim.core.work`.

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
        return _BYTES_PER_ELEMENT[self._value_]  # _value_: no call through the enum's value property


_BYTES_PER_ELEMENT = {"fp32": 4, "tf32": 4, "fp16": 2, "bf16": 2, "fp8": 1}


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
        size, stride, num_ranks = self.size, self.stride, self.num_ranks
        if (type(size) is int and size >= 1 and type(stride) is int and stride >= 1
                and type(num_ranks) is int and num_ranks >= 1 and num_ranks % (size * stride) == 0):
            object.__setattr__(self, "_hash", hash((size, stride, num_ranks)))
            return  # the checks below pass: the common case without their calls
        self._check_fields()
        object.__setattr__(self, "_hash", hash((self.size, self.stride, self.num_ranks)))

    def __hash__(self) -> int:
        # the hash the dataclass would compute from its fields, once: groups key every price lookup
        return self._hash

    def _check_fields(self) -> None:
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
        if type(self.op) is not CollectiveOp:
            object.__setattr__(self, "op", CollectiveOp(self.op))
        if type(self.phase) is not Phase:
            object.__setattr__(self, "phase", Phase(self.phase))
        size_bytes, count, group_size = self.size_bytes, self.count, self.group.size
        if not (type(size_bytes) is int and size_bytes >= 0 and type(count) is int and count >= 1
                and 0 <= self.root < group_size):
            self._check_fields()
        if self.op is CollectiveOp.SEND_RECV:
            _require(group_size == 2, "group.size", group_size, "send_recv needs a group of 2")

    def _check_fields(self) -> None:
        _require(isinstance(self.size_bytes, int) and self.size_bytes >= 0, "size_bytes", self.size_bytes,
                 "must be an integer >= 0")
        _require(isinstance(self.count, int) and self.count >= 1, "count", self.count, "must be an integer >= 1")
        _require(0 <= self.root < self.group.size, "root", self.root, f"must be in [0, {self.group.size})")


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
