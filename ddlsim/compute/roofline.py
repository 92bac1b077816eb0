"""The roofline: a compute task's time from its FLOPs and bytes on a device's datasheet.

    time_s = max(flop / (peak_flop_per_s[precision] * flop_efficiency),
                 memory_bytes / (memory_bandwidth_bytes_per_s * memory_efficiency)) + overhead_s

The efficiencies depend on the kind of work, because the same device reaches very different
fractions of its peaks on large GEMMs and attention (compute-bound, tensor cores), on embedding
lookups (random row gathers, memory-bound) and on element-wise work such as optimizer steps
(streaming, memory-bound). A task's work class comes from its phase (optimizer steps are
element-wise) and its shard's model kind (transformer layers are GEMM work, DLRM shards are
embedding work). docs/compute.md gives the default factors and their sources;
scripts/fit_roofline.py fits them to measured profiles.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ddlsim.compute.devices import DeviceSpec
from ddlsim.core.errors import ConfigError
from ddlsim.core.types import Phase, Precision
from ddlsim.core.work import ComputeTask, ShardSignature

WORK_CLASSES: tuple[str, ...] = ("gemm", "embedding", "elementwise")
DEFAULT_KIND_CLASSES: dict[str, str] = {"megatron_layer": "gemm", "gpt_layer": "gemm", "lm_head": "gemm",
                                         "dlrm_shard": "embedding"}


@dataclass(frozen=True)
class Efficiency:
    """Fractions of the datasheet peaks one class of work reaches, and a fixed cost per task."""

    flop: float
    memory: float
    overhead_s: float = 0.0

    def __post_init__(self) -> None:
        for key in ("flop", "memory"):
            value = getattr(self, key)
            if not 0 < value <= 1:
                raise ConfigError(key, value, "an efficiency must be in (0, 1]")
        if not self.overhead_s >= 0:
            raise ConfigError("overhead", self.overhead_s, "must be >= 0")


@dataclass(frozen=True)
class Roofline:
    device: DeviceSpec
    efficiencies: Mapping[str, Efficiency]
    kind_classes: Mapping[str, str]
    default_class: str = "gemm"

    def __post_init__(self) -> None:
        for work_class in (*self.kind_classes.values(), self.default_class, "elementwise"):
            if work_class not in self.efficiencies:
                known = ", ".join(self.efficiencies)
                raise ConfigError("classes", work_class, f"has no efficiencies; choose one of {known}")

    def work_class(self, signature: ShardSignature, phase: Phase | str) -> str:
        if Phase(phase) is Phase.OPTIMIZER:
            return "elementwise"
        return self.kind_classes.get(signature.model_kind, self.default_class)

    def time_s(self, flop: float, memory_bytes: float, precision: Precision | str, work_class: str) -> float:
        efficiency = self.efficiencies[work_class]
        compute_s = flop / (self.device.peak(precision) * efficiency.flop)
        memory_s = memory_bytes / (self.device.memory_bandwidth_bytes_per_s * efficiency.memory)
        return max(compute_s, memory_s) + efficiency.overhead_s

    def task_time_s(self, task: ComputeTask) -> float:
        """Time of one instance (count 1) of `task`."""
        return self.time_s(task.flop, task.memory_bytes, task.signature.precision,
                           self.work_class(task.signature, task.phase))

    def shape_time_s(self, signature: ShardSignature, phase: Phase | str, flop: float, memory_bytes: float) -> float:
        """Time of a shard of `signature` doing `flop` and `memory_bytes` in `phase` (a profiled shape)."""
        return self.time_s(flop, memory_bytes, signature.precision, self.work_class(signature, phase))
