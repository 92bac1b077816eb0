"""The settings of one packet-level run: offered load, locality, packets and time window."""

from __future__ import annotations

import math
from dataclasses import dataclass

from ddlsim.core import units
from ddlsim.core.errors import ConfigError


@dataclass(frozen=True)
class PacketRunConfig:
    """One point of the OPSquare load experiment (defaults: the paper's Section 2).

    `load` is the offered fraction of each node's injection bandwidth, `locality` the fraction of
    packets addressed inside the source's pod; the run lasts `warmup_s` + `measure_s` and only
    the second part is measured.
    """

    load: float
    locality: float
    packet_bytes: int = 1500
    warmup_s: float = 20e-6
    measure_s: float = 20e-6
    seed: int = 0

    def __post_init__(self) -> None:
        if not isinstance(self.packet_bytes, int) or self.packet_bytes < 1:
            raise ConfigError("packet_bytes", self.packet_bytes, "must be an integer >= 1")
        if not (math.isfinite(self.warmup_s) and self.warmup_s >= 0):
            raise ConfigError("warmup_s", self.warmup_s, "must be finite and >= 0")
        if not (math.isfinite(self.measure_s) and self.measure_s > 0):
            raise ConfigError("measure_s", self.measure_s, "must be finite and > 0")

    @property
    def packet_bits(self) -> float:
        return units.bytes_to_bits(self.packet_bytes)

    def slots(self, slot_s: float) -> tuple[int, int]:
        """(first measured slot, total slots) for slots of `slot_s` seconds."""
        start = math.ceil(self.warmup_s / slot_s - 1e-9)
        total = start + math.ceil(self.measure_s / slot_s - 1e-9)
        return start, total
