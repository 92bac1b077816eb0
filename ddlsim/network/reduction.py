"""Roofline cost of the local work inside a collective: x-to-1 reductions and local copies.

An x-to-1 reduction of b-byte vectors (RAMP Sections 7.4.1 and 8.4.2) reads x inputs and
writes one output, moving (x + 1) b bytes of device memory, and performs (x - 1) b / e
additions for e-byte elements. Its time is the roofline maximum of the two:

    time_s = max((x - 1) b / e / peak_flop_per_s, (x + 1) b * 8 / memory_bandwidth_bps)

Summing n inputs with n - 1 two-input reductions moves 3 (n - 1) b bytes, one x-to-1 reduction
moves (n + 1) b: the ratio 3 (x - 1) / (x + 1) is the "up to 2.8x" of RAMP Fig. 23 at x = 32.
A local copy reads and writes its bytes once each. The figures come from the device
datasheets shared with `compute/` (`ddlsim.core.datasheets`); half precision is the default, as in
RAMP. `network/` does not import `compute/`: callers pass a `ReductionModel`.
"""

from __future__ import annotations

from dataclasses import dataclass

from ddlsim.core import units
from ddlsim.core.datasheets import DATASHEETS
from ddlsim.core.errors import ConfigError
from ddlsim.core.types import Precision


@dataclass(frozen=True)
class ReductionModel:
    """Peak arithmetic rate and memory bandwidth of the device that reduces, and element size."""

    peak_flop_per_s: float
    memory_bandwidth_bps: float
    element_bytes: int = 2
    device: str = ""

    def __post_init__(self) -> None:
        for name in ("peak_flop_per_s", "memory_bandwidth_bps"):
            value = getattr(self, name)
            if not (value > 0 and value < float("inf")):
                raise ConfigError(name, value, "must be positive and finite")
        if self.element_bytes < 1:
            raise ConfigError("element_bytes", self.element_bytes, "must be >= 1")

    @classmethod
    def from_datasheet(cls, device: str = "a100_80gb", precision: Precision | str = Precision.FP16) -> ReductionModel:
        if device not in DATASHEETS:
            raise ConfigError("device", device, f"unknown device; choose one of {', '.join(DATASHEETS)}")
        precision = Precision(precision)
        sheet = DATASHEETS[device]
        return cls(peak_flop_per_s=units.parse_flop_per_s(getattr(sheet, precision.value), "peak"),
                   memory_bandwidth_bps=units.parse_bandwidth_bps(sheet.memory_bandwidth, "memory_bandwidth"),
                   element_bytes=precision.bytes_per_element, device=device)

    def reduction_time_s(self, fan_in: int, size_bytes: float) -> float:
        """Seconds to reduce `fan_in` vectors of `size_bytes` each into one."""
        flop = (fan_in - 1) * size_bytes / self.element_bytes
        memory_bytes = (fan_in + 1) * size_bytes
        return max(flop / self.peak_flop_per_s, units.transfer_time_s(memory_bytes, self.memory_bandwidth_bps))

    def copy_time_s(self, size_bytes: float) -> float:
        """Seconds to copy `size_bytes` inside device memory (one read, one write)."""
        return units.transfer_time_s(2 * size_bytes, self.memory_bandwidth_bps)


DEFAULT_DEVICE = "a100_80gb"


def resolve_reduction_model(device: ReductionModel | str | None) -> ReductionModel | None:
    """A model from a datasheet name, a model, or None (local work is free)."""
    if device is None or isinstance(device, ReductionModel):
        return device
    if isinstance(device, str):
        return ReductionModel.from_datasheet(device)
    raise ConfigError("device", device, "must be a datasheet name, a ReductionModel or None")
