"""The `training.at_scale` section: one switch per at-scale cost, all off by default (today's numbers)."""

from __future__ import annotations

from dataclasses import dataclass

from ddlsim.core.errors import ConfigError
from ddlsim.training.at_scale.stragglers import SPEED_SIGMA


@dataclass
class AtScaleConfig:
    """Switches of the at-scale costs (`ddlsim.training.at_scale`); `speed_sigma` is the standard
    deviation of GPU speed the straggler model draws from (Sinha et al. SC'22 by default)."""

    interference: bool = False
    stragglers: bool = False
    framework: bool = False
    speed_sigma: float = SPEED_SIGMA


@dataclass(frozen=True)
class AtScaleSettings:
    interference: bool = False
    stragglers: bool = False
    framework: bool = False
    speed_sigma: float = SPEED_SIGMA

    def __post_init__(self) -> None:
        for key in ("interference", "stragglers", "framework"):
            if not isinstance(getattr(self, key), bool):
                raise ConfigError(key, getattr(self, key), "must be true or false")
        if not 0 <= self.speed_sigma < 1:
            raise ConfigError("speed_sigma", self.speed_sigma, "must be in [0, 1)")

    @property
    def any(self) -> bool:
        return self.interference or self.stragglers or self.framework

    @classmethod
    def from_config(cls, config: AtScaleConfig) -> AtScaleSettings:
        return cls(interference=config.interference, stragglers=config.stragglers, framework=config.framework,
                   speed_sigma=float(config.speed_sigma))
