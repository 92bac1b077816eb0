"""Compute devices: peak FLOP/s per precision, memory bandwidth and capacity.

Known devices come with vendor datasheet numbers (dense, no sparsity); any field given in the
config overrides the datasheet. A new device is a YAML file in ``configs/device/`` that starts
from the closest known one (``defaults: [a100_80gb]``) and overrides its figures and label.

`profile_name` is the name measured profiles of the device are stored under: what
``torch.cuda.get_device_name()`` reports on it (``NVIDIA H100 80GB HBM3``), or, for the ``cpu``
entry, this machine's CPU model and thread count, so a CPU profile taken elsewhere never stands
in for this machine's.
"""

from __future__ import annotations

from dataclasses import dataclass

from ddlsim.compute.identity import local_cpu_name
from ddlsim.core import units
from ddlsim.core.datasheets import DATASHEETS
from ddlsim.core.errors import ConfigError
from ddlsim.core.registry import DEVICES
from ddlsim.core.types import Precision


@dataclass
class DeviceConfig:
    """A device by name; empty fields are taken from the datasheet of that name."""

    name: str = "a100_80gb"
    label: str = ""
    memory: str = ""
    memory_bandwidth: str = ""
    peak_fp32: str = ""
    peak_tf32: str = ""
    peak_fp16: str = ""
    peak_bf16: str = ""
    peak_fp8: str = ""
    profile_name: str = ""


@dataclass(frozen=True)
class DeviceSpec:
    """One device's roofline figures in internal units."""

    name: str
    label: str
    memory_bytes: int
    memory_bandwidth_bps: float
    peak_flop_per_s: dict[Precision, float]
    profile_name: str = ""
    unsupported: frozenset[Precision] = frozenset()

    def peak(self, precision: Precision | str) -> float:
        return self.peak_flop_per_s[Precision(precision)]

    def check_precision(self, precision: Precision | str, key: str = "model.precision") -> Precision:
        """`precision` if the device computes in it, else a `ConfigError` naming `key` (fp8 on an A100)."""
        if Precision(precision) in self.unsupported:
            supported = ", ".join(item.value for item in Precision if item not in self.unsupported)
            raise ConfigError(key, Precision(precision).value, f"device {self.name} ({self.label}) has no "
                              f"{Precision(precision).value} tensor cores; choose one of {supported}, or a device "
                              "that has them")
        return Precision(precision)

    @property
    def memory_bandwidth_bytes_per_s(self) -> float:
        return units.bits_to_bytes(self.memory_bandwidth_bps)

    @classmethod
    def from_config(cls, config: DeviceConfig) -> DeviceSpec:
        if config.name not in DATASHEETS:
            raise ConfigError("name", config.name, f"unknown device; choose one of {', '.join(DATASHEETS)}")
        sheet = DATASHEETS[config.name]
        peaks = {
            precision: units.parse_flop_per_s(getattr(config, f"peak_{precision.value}") or
                                              getattr(sheet, precision.value), f"peak_{precision.value}")
            for precision in Precision
        }
        return cls(
            name=config.name,
            label=config.label or sheet.label,
            memory_bytes=units.parse_size_bytes(config.memory or sheet.memory, "memory", allow_zero=False),
            memory_bandwidth_bps=units.parse_bandwidth_bps(config.memory_bandwidth or sheet.memory_bandwidth,
                                                           "memory_bandwidth"),
            peak_flop_per_s=peaks,
            profile_name=config.profile_name or sheet.profile_name or local_cpu_name(),
            # a rate given in the config makes the precision the device's, whatever the datasheet says
            unsupported=frozenset(Precision(name) for name in sheet.unsupported if not getattr(config, f"peak_{name}")),
        )


for _name, _sheet in DATASHEETS.items():
    DEVICES.register(_name, DeviceConfig, summary=_sheet.label)(DeviceSpec)
