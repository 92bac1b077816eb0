"""The parallel plan a user asks for: degrees to fix, or 0 to let the partitioner choose."""

from __future__ import annotations

from dataclasses import dataclass

from ddlsim.errors import ConfigError


@dataclass
class ParallelConfig:
    """Degrees of tensor, data and pipeline parallelism, and the limits the partitioner obeys.

    A degree of 0 means "choose for me". `max_gpus` caps tensor x data x pipeline.
    `param_limit_per_gpu` is the parameters-per-GPU target of the tensor-parallel choice
    (RAMP 7.2.1 uses 1.6e9 for an 80 GB A100). `micro_batch` is the per-GPU (local) batch of
    one replica, 0 to fill memory. `power_of_two` makes the data-parallel degree the partitioner
    chooses a power of two (tensor-parallel degrees always are). `activation_offload` keeps the
    activation checkpoints in host memory (RAMP 7.3), so only one layer's activations count
    against device memory.
    """

    tensor: int = 0
    data: int = 0
    pipeline: int = 1
    micro_batch: int = 0
    max_gpus: int = 65536
    param_limit_per_gpu: float = 1.6e9
    sequence_parallel: bool = False
    activation_checkpointing: bool = True
    activation_offload: bool = False
    power_of_two: bool = True

    def __post_init__(self) -> None:
        for key in ("tensor", "data", "micro_batch"):
            if getattr(self, key) < 0:
                raise ConfigError(key, getattr(self, key), "must be >= 0 (0 lets the partitioner choose)")
        for key in ("pipeline", "max_gpus"):
            if getattr(self, key) < 1:
                raise ConfigError(key, getattr(self, key), "must be >= 1")
        if not self.param_limit_per_gpu > 0:
            raise ConfigError("param_limit_per_gpu", self.param_limit_per_gpu, "must be positive")
        if self.activation_offload and not self.activation_checkpointing:
            raise ConfigError("activation_offload", self.activation_offload,
                              "offloads activation checkpoints, so it needs activation_checkpointing = true")
        fixed = [degree for degree in (self.tensor, self.data, self.pipeline) if degree]
        product = 1
        for degree in fixed:
            product *= degree
        if product > self.max_gpus:
            raise ConfigError("max_gpus", self.max_gpus,
                              f"is smaller than tensor x data x pipeline = {product}")
