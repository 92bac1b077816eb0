"""Failures, checkpoints and restarts in time-to-train (`training.failures`).

A synchronous job stops whenever any of its GPUs fails, goes back to its last checkpoint, restarts
and redoes the work since. With failures arriving at random (exponentially distributed gaps) at
``rate_per_gpu_hour`` per GPU, the job's mean time between failures is M = 1 / (rate x GPUs). A
checkpoint takes delta = checkpoint bytes / write bandwidth, a restart R, and one is written
every tau seconds of training. The expected wall time of T seconds of training is Daly's
(2006, Eq. 15):

    wall = M e^(R/M) (e^((tau + delta)/M) - 1) T / tau

and `goodput` = T / wall, the fraction of wall time that advances training. The default interval
is the optimum of that expression to Daly's higher order (his Eq. 37), which for delta << M is
Young's (1974) sqrt(2 delta M):

    tau = sqrt(2 delta M) [1 + sqrt(delta / (2M)) / 3 + delta / (18 M)] - delta   (delta < 2M), else M.

Sources: J. W. Young, "A first order approximation to the optimum checkpoint interval", CACM
17(9), 1974; J. T. Daly, "A higher order estimate of the optimum checkpoint interval for restart
dumps", Future Generation Computer Systems 22(3), 2006. The default failure rate is Llama 3's
(Llama Team, "The Llama 3 Herd of Models", 2024, Sec. 3.3.4 and Table 5): 419 unexpected
interruptions in a 54-day snapshot of pre-training on 16,384 H100 GPUs; the default write bandwidth
is the sustained throughput of the Tectonic file system the same paper checkpointed to (2 TB/s,
Sec. 3.3.1). The restart time has no published figure we could cite: 10 minutes is an assumption
(docs/training.md shows how the Llama 3 check moves with it).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ddlsim.core import units
from ddlsim.core.errors import ConfigError

HOUR_S = 3600.0
LLAMA3_UNEXPECTED_INTERRUPTIONS = 419
LLAMA3_SNAPSHOT_DAYS = 54
LLAMA3_GPUS = 16384
LLAMA3_RATE_PER_GPU_HOUR = LLAMA3_UNEXPECTED_INTERRUPTIONS / (LLAMA3_SNAPSHOT_DAYS * 24 * LLAMA3_GPUS)
TECTONIC_WRITE_BANDWIDTH = "2TB/s"  # Llama 3, Sec. 3.3.1: sustained throughput of the checkpoint store
MAIN_WEIGHT_BYTES = 4  # fp32 main weights, kept beside 16-bit model weights
ADAM_MOMENT_BYTES = 8  # Adam's first and second moments in fp32


@dataclass
class FailuresConfig:
    """The `training.failures` section (module docstring). Empty strings mean the defaults:
    `checkpoint_bytes` from the model (its parameters in their precision, plus fp32 main weights
    and Adam's moments), `checkpoint_interval` Daly's optimum."""

    enabled: bool = False
    rate_per_gpu_hour: float = LLAMA3_RATE_PER_GPU_HOUR
    checkpoint_bytes: str = ""
    write_bandwidth: str = TECTONIC_WRITE_BANDWIDTH
    checkpoint_interval: str = ""
    restart_time: str = "10min"


@dataclass(frozen=True)
class FailureSettings:
    """`FailuresConfig` in internal units; None fields take the defaults of the module docstring."""

    enabled: bool = False
    rate_per_gpu_hour: float = LLAMA3_RATE_PER_GPU_HOUR
    checkpoint_bytes: int | None = None
    write_bandwidth_bytes_per_s: float = 2e12
    checkpoint_interval_s: float | None = None
    restart_s: float = 600.0

    def __post_init__(self) -> None:
        if not isinstance(self.enabled, bool):
            raise ConfigError("enabled", self.enabled, "must be true or false")
        if not (math.isfinite(self.rate_per_gpu_hour) and self.rate_per_gpu_hour > 0):
            raise ConfigError("rate_per_gpu_hour", self.rate_per_gpu_hour, "must be a finite rate > 0")
        if self.checkpoint_bytes is not None and self.checkpoint_bytes < 0:
            raise ConfigError("checkpoint_bytes", self.checkpoint_bytes, "must be >= 0")
        if not self.write_bandwidth_bytes_per_s > 0:
            raise ConfigError("write_bandwidth", self.write_bandwidth_bytes_per_s, "must be > 0")
        if self.checkpoint_interval_s is not None and not self.checkpoint_interval_s > 0:
            raise ConfigError("checkpoint_interval", self.checkpoint_interval_s, "must be > 0")
        if not self.restart_s >= 0:
            raise ConfigError("restart_time", self.restart_s, "must be >= 0")

    @classmethod
    def from_config(cls, config: FailuresConfig) -> FailureSettings:
        return cls(
            enabled=bool(config.enabled),
            rate_per_gpu_hour=float(config.rate_per_gpu_hour),
            checkpoint_bytes=units.parse_size_bytes(config.checkpoint_bytes, "checkpoint_bytes")
            if config.checkpoint_bytes else None,
            write_bandwidth_bytes_per_s=units.parse_bandwidth_bps(config.write_bandwidth, "write_bandwidth") / 8,
            checkpoint_interval_s=units.parse_time_s(config.checkpoint_interval, "checkpoint_interval", bounds=None)
            if config.checkpoint_interval else None,
            restart_s=units.parse_time_s(config.restart_time, "restart_time", bounds=None))


def young_interval_s(checkpoint_s: float, mtbf_s: float) -> float:
    """Young's first-order optimum: sqrt(2 delta M)."""
    return math.sqrt(2 * checkpoint_s * mtbf_s)


def daly_interval_s(checkpoint_s: float, mtbf_s: float) -> float:
    """Daly's higher-order optimum (module docstring); M itself once delta reaches 2M."""
    if checkpoint_s >= 2 * mtbf_s:
        return mtbf_s
    ratio = checkpoint_s / (2 * mtbf_s)
    return young_interval_s(checkpoint_s, mtbf_s) * (1 + math.sqrt(ratio) / 3 + ratio / 9) - checkpoint_s


def expected_wall_s(train_s: float, interval_s: float, checkpoint_s: float, restart_s: float, mtbf_s: float) -> float:
    """Daly's expected wall time of `train_s` seconds of training (module docstring)."""
    if train_s <= 0:
        return 0.0
    return mtbf_s * math.exp(restart_s / mtbf_s) * math.expm1((interval_s + checkpoint_s) / mtbf_s) * \
        train_s / interval_s


@dataclass(frozen=True)
class FailureCosts:
    """What failures, checkpoints and restarts do to one job's time to train."""

    mtbf_s: float
    checkpoint_bytes: int
    checkpoint_s: float
    interval_s: float
    restart_s: float
    train_s: float
    wall_s: float

    @property
    def goodput(self) -> float:
        return self.train_s / self.wall_s if self.wall_s > 0 else 1.0

    @property
    def expected_interruptions(self) -> float:
        return self.wall_s / self.mtbf_s

    def row(self) -> dict[str, float]:
        return {"goodput": self.goodput, "mtbf_s": self.mtbf_s, "checkpoint_bytes": self.checkpoint_bytes,
                "checkpoint_s": self.checkpoint_s, "checkpoint_interval_s": self.interval_s,
                "restart_s": self.restart_s, "expected_interruptions": self.expected_interruptions,
                "failure_free_time_to_accuracy_s": self.train_s}


def checkpoint_bytes_of(params: int, param_bytes: int) -> int:
    """A checkpoint of `params` parameters kept in `param_bytes` each, with fp32 main weights and
    Adam's two moments (the model and optimizer state a restart needs)."""
    main = 0 if param_bytes >= MAIN_WEIGHT_BYTES else MAIN_WEIGHT_BYTES
    return params * (param_bytes + main + ADAM_MOMENT_BYTES)


def failure_costs(settings: FailureSettings, num_gpus: int, train_s: float, checkpoint_bytes: int) -> FailureCosts:
    """The costs of failures for a job of `num_gpus` that trains for `train_s` seconds."""
    mtbf_s = HOUR_S / (settings.rate_per_gpu_hour * num_gpus)
    size = settings.checkpoint_bytes if settings.checkpoint_bytes is not None else checkpoint_bytes
    checkpoint_s = size / settings.write_bandwidth_bytes_per_s
    interval_s = settings.checkpoint_interval_s or daly_interval_s(checkpoint_s, mtbf_s)
    wall_s = expected_wall_s(train_s, interval_s, checkpoint_s, settings.restart_s, mtbf_s)
    return FailureCosts(mtbf_s=mtbf_s, checkpoint_bytes=size, checkpoint_s=checkpoint_s, interval_s=interval_s,
                        restart_s=settings.restart_s, train_s=train_s, wall_s=wall_s)
