"""How a profile run measures: iterations, warm-up and the statistic a row keeps (no torch here, so
that ``task=profile`` validates its config without loading torch)."""

from __future__ import annotations

from dataclasses import dataclass

from ddlsim.core.errors import ConfigError

STATISTICS = ("median", "min")


@dataclass(frozen=True)
class ProfileSettings:
    """`statistic` picks the iteration time a row keeps: the median, or the minimum, which is
    the better estimate of the device's own speed on a machine shared with other work."""

    iterations: int = 20
    warmup: int = 3
    statistic: str = "median"

    def __post_init__(self) -> None:
        if self.statistic not in STATISTICS:
            raise ConfigError("statistic", self.statistic, f"choose one of {', '.join(STATISTICS)}")
        if self.iterations < 1:
            raise ConfigError("iterations", self.iterations, "must be >= 1")
        if self.warmup < 0:
            raise ConfigError("warmup", self.warmup, "must be >= 0")


DEFAULT_SETTINGS = ProfileSettings()
