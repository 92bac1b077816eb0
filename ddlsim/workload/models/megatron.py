"""Megatron-style transformer, sized from a target loss or given directly."""

from __future__ import annotations

from dataclasses import dataclass

from ddlsim.errors import ConfigError
from ddlsim.registry import MODELS


@dataclass
class MegatronConfig:
    """Either `target_loss` (scaling laws choose the shape) or d_model, heads and layers."""

    name: str = "megatron"
    target_loss: float = 2.5
    d_model: int = 0
    heads: int = 0
    layers: int = 0
    seq_len: int = 1024


@MODELS.register("megatron", MegatronConfig)
@dataclass(frozen=True)
class MegatronModel:
    """Encoder-only transformer partitioned the Megatron way."""

    target_loss: float
    d_model: int
    heads: int
    layers: int
    seq_len: int
    name: str = "megatron"

    @classmethod
    def from_config(cls, config: MegatronConfig) -> MegatronModel:
        shape = (config.d_model, config.heads, config.layers)
        if any(shape) and not all(shape):
            raise ConfigError("d_model", config.d_model, "d_model, heads and layers are given together or not at all")
        if not any(shape) and not config.target_loss > 0:
            raise ConfigError("target_loss", config.target_loss, "must be positive when no shape is given")
        if config.seq_len < 1:
            raise ConfigError("seq_len", config.seq_len, "must be >= 1")
        return cls(config.target_loss, config.d_model, config.heads, config.layers, config.seq_len)
