"""A transformer's shape from its non-embedding parameter count (the scaling-law block).

Kaplan et al. 2020 (Sec. 3.1, Fig. 5) find the loss depends only weakly on the shape at fixed N
(within a few percent for d_model / n_layer between about 20 and 200), so the shape is a
documented convention, not a fit:

- width from the aspect ratio r = d_model / n_layer and N = 12 n_layer d_model^2 (Eq. 2.1):
  d_model ~ (N r / 12)^(1/3);
- heads a power of two, each `head_dim` wide (128 by default), d_model = heads x head_dim;
- layers = round(N / (12 d_model^2)), at least 1;
- d_ff = 4 d_model, sequence length 1024 (RAMP Sec. 7.3).

Megatron needs whole heads per tensor-parallel rank. When the tensor-parallel degree the
partitioner needs exceeds the head count, `widen_heads` splits the same width into that many
narrower heads, as RAMP Table 9 does (heads = MP degree in its five largest rows).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from ddlsim.core.errors import ConfigError, InfeasibleError
from ddlsim.workload.transformer.layer import LayerShape

DEFAULT_ASPECT_RATIO = 64.0
DEFAULT_HEAD_DIM = 128


@dataclass(frozen=True)
class TransformerStack:
    """`layers` identical layers; the non-embedding part of a transformer."""

    layer: LayerShape
    layers: int

    def __post_init__(self) -> None:
        if not isinstance(self.layers, int) or self.layers < 1:
            raise ConfigError("layers", self.layers, "must be an integer >= 1")

    def params(self) -> int:
        return self.layers * self.layer.params()

    def kaplan_params(self) -> int:
        """Kaplan's N: GEMM weights only, 12 n_layer d_model^2 for a standard layer (Eq. 2.1)."""
        return self.layers * self.layer.matmul_params()

    def params_per_rank(self, tp: int) -> int:
        return self.layers * self.layer.params_per_rank(tp)


def stack_for_params(params: float, seq_len: int, *, aspect_ratio: float = DEFAULT_ASPECT_RATIO,
                     head_dim: int = DEFAULT_HEAD_DIM, causal: bool = False) -> TransformerStack:
    """The standard-layer stack of about `params` non-embedding parameters (see module doc)."""
    if not params > 0:
        raise ConfigError("params", params, "must be positive")
    if not aspect_ratio > 0:
        raise ConfigError("aspect_ratio", aspect_ratio, "must be positive")
    if head_dim < 1:
        raise ConfigError("head_dim", head_dim, "must be >= 1")
    width = (params * aspect_ratio / 12.0) ** (1.0 / 3.0)
    heads = 2 ** max(0, round(math.log2(max(width / head_dim, 1.0))))
    d_model = heads * head_dim
    layers = max(1, round(params / (12.0 * d_model * d_model)))
    return TransformerStack(LayerShape(d_model, heads, seq_len, causal=causal), layers)


def widen_heads(layer: LayerShape, tp: int) -> LayerShape:
    """The same layer split into `tp` heads when `tp` > heads (head_dim = d_model / tp)."""
    if tp <= layer.heads:
        return layer
    if layer.d_model % tp:
        raise InfeasibleError(f"tensor-parallel degree {tp} exceeds d_model = {layer.d_model}: "
                              "no head split gives every rank a whole head")
    return replace(layer, heads=tp, kv_heads=tp if layer.kv_heads == layer.heads else layer.kv_heads)
