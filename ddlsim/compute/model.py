"""The compute model: the time of a compute task on one device, and where that number came from.

Lookup order for ``source=auto``:

1. measured: a profile row of this device with the task's exact signature and phase;
2. scaled: the nearest measured shape of the same model kind, phase, precision and
   checkpointing (`store.shape_distance`: summed log differences of the shape entries and the
   local batch), if its work (FLOPs, or bytes for FLOP-free work) is within `max_scale_ratio`
   of the task's, scaled by the roofline's ratio between the two shapes, so the measured
   efficiency carries over and only the change in work is modelled;
3. roofline: the device's datasheet with the work class's efficiencies.

``source=measured`` refuses anything but an exact row (InfeasibleError); ``source=roofline``
ignores profiles. Profiles are only ever read for this model's device name.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

from ddlsim.compute.devices import DeviceSpec
from ddlsim.compute.roofline import DEFAULT_KIND_CLASSES, Efficiency, Roofline
from ddlsim.compute.store import ProfileStore, work_size
from ddlsim.core import units
from ddlsim.core.caches import Memo
from ddlsim.core.errors import ConfigError, InfeasibleError
from ddlsim.core.resources import profiles_dir
from ddlsim.core.types import ComputeEstimate, ComputeSource
from ddlsim.core.work import ComputeTask

SHIPPED_PROFILES = profiles_dir()
SOURCES = ("auto", "measured", "roofline")


@dataclass
class EfficiencyConfig:
    """Fractions of peak FLOP/s and memory bandwidth one class of work reaches, plus a per-task cost."""

    flop: float = 0.5
    memory: float = 0.8
    overhead: str = "0s"


@dataclass
class KernelModelConfig:
    """The kernel roofline (`compute/kernel_roofline.py`): how every kernel list is priced.

    On by default. A 0 (or empty `attention`) takes the device's published figure
    (`compute/kernel_tables.py`): `gemm` the MAMF fraction of the peak, `memory` the streaming
    fraction of the bandwidth, `sm_count`, `l2_ridge_flop_per_byte`, `attention` the flash
    table (``none`` prices attention at the `gemm` fraction). `compute=a100_megatron` sets
    constants fitted to measured A100 Megatron runs (docs/validation.md). `enabled` false prices
    every task by its totals with the class efficiencies instead (the model before kernel lists).
    """

    enabled: bool = True
    gemm: float = 0.0
    memory: float = 0.0
    host_per_launch: str = "0s"
    device_per_kernel: str = "0s"
    sm_count: int = 0
    l2_ridge_flop_per_byte: float = 0.0
    attention: str = ""


@dataclass
class ComputeConfig:
    """How compute tasks are priced: profiles first (see `source`), then the roofline."""

    name: str = "default"
    source: str = "auto"
    profile_dirs: list[str] = field(default_factory=list)
    shipped_profiles: bool = True
    scaling: bool = True
    max_scale_ratio: float = 8.0
    gemm: EfficiencyConfig = field(default_factory=lambda: EfficiencyConfig(flop=0.5, memory=0.8))
    embedding: EfficiencyConfig = field(default_factory=lambda: EfficiencyConfig(flop=0.3, memory=0.4))
    elementwise: EfficiencyConfig = field(default_factory=lambda: EfficiencyConfig(flop=0.5, memory=0.7))
    classes: dict[str, str] = field(default_factory=lambda: dict(DEFAULT_KIND_CLASSES))
    kernels: KernelModelConfig = field(default_factory=KernelModelConfig)
    fusion: bool = True


def kernel_efficiency(config: KernelModelConfig, device: DeviceSpec):
    """The kernel roofline's constants: the config's, else the device's published ones."""
    from ddlsim.compute.kernel_roofline import KernelEfficiency
    from ddlsim.compute.kernel_tables import FLASH_TABLES, KERNEL_SHEETS

    sheet = KERNEL_SHEETS[device.name]  # every datasheet has its kernel sheet (tests/compute/test_kernel_tables.py)
    attention = config.attention or sheet.attention
    if attention != "none" and attention not in FLASH_TABLES:
        raise ConfigError("kernels.attention", attention, f"choose one of none, {', '.join(FLASH_TABLES)}")
    try:
        return KernelEfficiency(
            gemm=config.gemm or sheet.gemm, memory=config.memory or sheet.memory,
            host_s_per_launch=units.parse_time_s(config.host_per_launch, "host_per_launch"),
            device_s_per_kernel=units.parse_time_s(config.device_per_kernel, "device_per_kernel"),
            sm_count=config.sm_count or sheet.sm_count,
            l2_ridge_flop_per_byte=config.l2_ridge_flop_per_byte or sheet.l2_ridge_flop_per_byte,
            attention=FLASH_TABLES.get(attention))
    except ConfigError as error:
        raise error.under("kernels") from None


def _kernel_roofline(config: KernelModelConfig, device: DeviceSpec, efficiencies: dict[str, Efficiency],
                     classes: dict[str, str]) -> Roofline:
    from ddlsim.compute.kernel_roofline import KernelRoofline

    return KernelRoofline(device=device, efficiencies=efficiencies, kind_classes=classes,
                          kernel=kernel_efficiency(config, device))


def _efficiency(config: EfficiencyConfig, key: str) -> Efficiency:
    try:
        return Efficiency(flop=config.flop, memory=config.memory,
                          overhead_s=units.parse_time_s(config.overhead, "overhead"))
    except ConfigError as error:
        raise error.under(key) from None


class ComputeModel:
    """`estimate(task)` -> ComputeEstimate(time_s for count 1, source, device)."""

    def __init__(self, device: DeviceSpec, roofline: Roofline, *, source: str = "auto",
                 profile_dirs: tuple[Path, ...] = (), scaling: bool = True, max_scale_ratio: float = 8.0,
                 fusion: bool = True) -> None:
        if source not in SOURCES:
            raise ConfigError("source", source, f"choose one of {', '.join(SOURCES)}")
        if not max_scale_ratio >= 1 and max_scale_ratio != 0:
            raise ConfigError("max_scale_ratio", max_scale_ratio, "must be >= 1, or 0 for no limit")
        self.device = device
        self.device_name = device.profile_name
        self.roofline = roofline
        self.source = source
        self.profile_dirs = profile_dirs
        self.scaling = scaling
        self.max_scale_ratio = max_scale_ratio
        self.fusion = fusion  # captured programs: runs of memory-bound ops priced as one kernel each
        self._store: ProfileStore | None = None
        self._cache = Memo("compute estimates")  # ComputeTask -> ComputeEstimate

    @classmethod
    def from_config(cls, config: ComputeConfig, device: DeviceSpec) -> ComputeModel:
        directories = []
        for directory in config.profile_dirs:
            path = Path(directory).expanduser()
            if not path.is_dir():
                raise ConfigError("profile_dirs", directory, "is not a directory")
            directories.append(path)
        if config.shipped_profiles:
            directories.append(SHIPPED_PROFILES)
        efficiencies = {name: _efficiency(getattr(config, name), name) for name in ("gemm", "embedding", "elementwise")}
        if config.kernels.enabled:
            roofline = _kernel_roofline(config.kernels, device, efficiencies, dict(config.classes))
        else:
            roofline = Roofline(device=device, efficiencies=efficiencies, kind_classes=dict(config.classes))
        return cls(device, roofline, source=config.source, profile_dirs=tuple(directories),
                   scaling=config.scaling, max_scale_ratio=config.max_scale_ratio, fusion=config.fusion)

    @property
    def store(self) -> ProfileStore:
        if self._store is None:  # read lazily: building components must stay cheap
            self._store = ProfileStore(self.profile_dirs, self.device_name)
        return self._store

    def estimate(self, task: ComputeTask) -> ComputeEstimate:
        cached = self._cache.get(task)
        if cached is None:
            cached = self._cache.put(task, self._estimate(task))
        return cached

    def _estimate(self, task: ComputeTask) -> ComputeEstimate:
        if self.source != "roofline":
            row = self.store.exact(task.signature, task.phase)
            if row is not None:
                return ComputeEstimate(row.time_s, ComputeSource.MEASURED, self.device_name)
            if self.source == "measured":
                raise InfeasibleError(
                    f"compute.source=measured, but no profile of device {self.device_name!r} holds "
                    f"{task.signature.key()} phase {task.phase.value}; profile it with "
                    f"'ddlsim-profile' on that device or allow compute.source=auto")
            if self.scaling:
                scaled = self._scaled_s(task)
                if scaled is not None:
                    return ComputeEstimate(scaled, ComputeSource.SCALED, self.device_name)
        return ComputeEstimate(self.roofline.task_time_s(task), ComputeSource.ROOFLINE, self.device_name)

    def _scaled_s(self, task: ComputeTask) -> float | None:
        row = self.store.nearest(task.signature, task.phase, task.flop, task.memory_bytes)
        if row is None:
            return None
        ratio = work_size(task.flop, task.memory_bytes) / work_size(row.flop, row.memory_bytes)
        if self.max_scale_ratio and abs(math.log(ratio)) > math.log(self.max_scale_ratio):
            return None
        measured_shape_s = self.roofline.shape_time_s(row.signature, row.phase, row.flop, row.memory_bytes)
        if measured_shape_s <= 0:
            return None
        return row.time_s * self.roofline.task_time_s(task) / measured_shape_s
