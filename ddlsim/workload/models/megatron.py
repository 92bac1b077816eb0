"""`model=megatron`: an encoder-only transformer (RAMP Sec. 7.2.1), sized from a target loss by
the scaling laws or given directly, built by the Megatron-2021 flavour of the transformer
generator (`ddlsim.workload.transformer.workload.build_megatron2021_workload`: TP x DP filling memory).

From a loss, the shape follows `transformer.stack.stack_for_params` at `aspect_ratio`. Every layer
replicates its norms and row-parallel biases on each tensor-parallel rank, so a very deep model
can exceed the per-GPU parameter limit at every degree up to max_gpus; the shape is then made
wider and shallower (aspect ratio doubled, up to 2^12 times) until it partitions, as RAMP Table 9
does for its largest models (d_model / layers = 2,913 at CE 1.0). The ratio used is reported.

Heads are `head_dim` wide, and a tensor-parallel degree must divide them: a plan that needs more
tensor-parallel ranks than heads is infeasible, never silently given narrower heads. RAMP Table 9
does split the width into as many heads as MP ranks (head size 4 at CE 1.0); `widen_heads=true`
asks for that convention explicitly.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from ddlsim.core.errors import ConfigError, InfeasibleError
from ddlsim.core.registry import MODELS
from ddlsim.core.types import Precision
from ddlsim.core.work import Workload
from ddlsim.workload.models.common import parse_precision
from ddlsim.workload.parallel import ParallelConfig, reject_unsupported, with_legacy_checkpointing
from ddlsim.workload.scaling_laws import (
    DEFAULT_LOSS_GAP,
    MAX_TARGET_LOSS,
    MIN_TARGET_LOSS,
    TrainingBudget,
    loss_for_params,
)
from ddlsim.workload.transformer.collectives import TP_ALL_REDUCE_RULES
from ddlsim.workload.transformer.layer import LayerShape
from ddlsim.workload.transformer.megatron2021_plan import Megatron2021Model
from ddlsim.workload.transformer.stack import TransformerStack, stack_for_params
from ddlsim.workload.transformer.workload import build_megatron2021_workload

MAX_ASPECT_DOUBLINGS = 12
# The parallel options the Megatron-2021 flavour honours (pipeline 1 is checked by its partition).
MEGATRON_OPTIONS = ("tensor", "data", "pipeline", "micro_batch", "sequence_parallel", "activation_offload")


@dataclass
class MegatronConfig:
    """Either `target_loss` alone (the scaling laws choose the shape) or d_model, heads and layers.

    With a shape, `target_loss` sets the critical batch and the steps (0: the loss the shape
    converges to, Kaplan Eq. 1.1). `global_batch` 0 targets the critical batch B_crit(L).
    `loss_gap` is how close to the converged loss training goes (see scaling_laws.py).
    `widen_heads` lets a shape sized from the loss split its width into as many heads as
    tensor-parallel ranks when they outnumber the heads (RAMP Table 9); off, such a plan is
    infeasible. `tp_all_reduces` is "megatron" (every TP all-reduce Megatron runs: 6 per layer with
    recompute) or "ramp_7_2_1" (the two RAMP 7.2.1 names). `shape_source` "ramp_table9" takes the
    shape, global batch, steps, TP and DP of RAMP Table 9's row for `target_loss` instead of the
    scaling laws and the memory-filling partitioner (their local batch is global batch / DP).
    """

    name: str = "megatron"
    target_loss: float = 2.5
    d_model: int = 0
    heads: int = 0
    layers: int = 0
    ffn_hidden: int = 0
    seq_len: int = 1024
    causal: bool = False
    global_batch: int = 0
    aspect_ratio: float = 64.0
    head_dim: int = 128
    loss_gap: float = DEFAULT_LOSS_GAP
    precision: str = "fp16"
    widen_heads: bool = False
    tp_all_reduces: str = "megatron"
    shape_source: str = "scaling_laws"


SHAPE_SOURCES = ("scaling_laws", "ramp_table9")


@MODELS.register("megatron", MegatronConfig)
@dataclass(frozen=True)
class MegatronTransformer:
    """Encoder-only transformer partitioned the Megatron way (tensor + data parallel)."""

    budget: TrainingBudget
    stack: TransformerStack
    from_loss: bool
    global_batch: int
    precision: Precision
    aspect_ratio: float = 64.0
    head_dim: int = 128
    name: str = "megatron"
    widen_heads: bool = False
    tp_all_reduces: str = "megatron"
    table9_row: Any = None  # a ramp_reference.Table9Row when shape_source = ramp_table9

    @classmethod
    def from_config(cls, config: MegatronConfig) -> MegatronTransformer:
        shape = (config.d_model, config.heads, config.layers)
        if any(shape) and not all(shape):
            raise ConfigError("d_model", config.d_model, "d_model, heads and layers are given together or not at all")
        for key in ("seq_len", "head_dim"):
            if getattr(config, key) < 1:
                raise ConfigError(key, getattr(config, key), "must be >= 1")
        for key in ("global_batch", "ffn_hidden"):
            if getattr(config, key) < 0:
                raise ConfigError(key, getattr(config, key), "must be >= 0 (0 chooses for you)")
        if config.target_loss < 0:
            raise ConfigError("target_loss", config.target_loss, "must be positive (or 0 with a shape)")
        if not config.aspect_ratio > 0:
            raise ConfigError("aspect_ratio", config.aspect_ratio, "must be positive")
        precision = parse_precision(config.precision)
        if config.tp_all_reduces not in TP_ALL_REDUCE_RULES:
            raise ConfigError("tp_all_reduces", config.tp_all_reduces,
                              f"must be one of {', '.join(TP_ALL_REDUCE_RULES)}")
        if config.shape_source not in SHAPE_SOURCES:
            raise ConfigError("shape_source", config.shape_source, f"must be one of {', '.join(SHAPE_SOURCES)}")
        if config.shape_source == "ramp_table9":
            return cls._from_table9(config, precision)
        if all(shape):
            layer = LayerShape(config.d_model, config.heads, config.seq_len, ffn_hidden=config.ffn_hidden,
                               causal=config.causal)
            stack = TransformerStack(layer, config.layers)
            if config.target_loss > 0:
                budget = TrainingBudget(config.target_loss, config.seq_len, config.loss_gap)
            else:
                loss = loss_for_params(stack.kaplan_params())
                if not MIN_TARGET_LOSS <= loss <= MAX_TARGET_LOSS:
                    raise ConfigError("layers", config.layers,
                                      f"this shape ({stack.kaplan_params():,} parameters) converges to {loss:.3g} "
                                      f"nats, outside the scaling laws' domain ({MIN_TARGET_LOSS:.1f} to "
                                      f"{MAX_TARGET_LOSS:.2f}); give a target_loss for its steps")
                budget = TrainingBudget(loss, config.seq_len, config.loss_gap)
            return cls(budget, stack, False, config.global_batch, precision, name=config.name,
                       tp_all_reduces=config.tp_all_reduces)
        if not config.target_loss > 0:
            raise ConfigError("target_loss", config.target_loss, "must be positive when no shape is given")
        budget = TrainingBudget(config.target_loss, config.seq_len, config.loss_gap)
        stack = stack_for_params(budget.params, config.seq_len, aspect_ratio=config.aspect_ratio,
                                 head_dim=config.head_dim, causal=config.causal)
        return cls(budget, stack, True, config.global_batch, precision, config.aspect_ratio, config.head_dim,
                   config.name, config.widen_heads, config.tp_all_reduces)

    @classmethod
    def _from_table9(cls, config: MegatronConfig, precision: Precision) -> MegatronTransformer:
        from ddlsim.workload.ramp_reference import TABLE9

        rows = {row.loss: row for row in TABLE9}
        row = rows.get(config.target_loss)
        if row is None:
            raise ConfigError("target_loss", config.target_loss,
                              f"shape_source=ramp_table9 needs one of Table 9's losses: {', '.join(map(str, rows))}")
        layer = LayerShape(row.d_model, row.heads, config.seq_len, causal=config.causal)
        budget = TrainingBudget(config.target_loss, config.seq_len, config.loss_gap)
        return cls(budget, TransformerStack(layer, row.layers), False, row.global_batch, precision, name=config.name,
                   tp_all_reduces=config.tp_all_reduces, table9_row=row)

    def build_workload(self, parallel: ParallelConfig, memory_bytes: int) -> Workload:
        reject_unsupported(parallel, "megatron", MEGATRON_OPTIONS, ("none", "full"))
        parallel = with_legacy_checkpointing(parallel)
        if self.table9_row is not None:
            return self._build_table9(parallel, memory_bytes)
        if not self.from_loss:
            return self._build(self.stack, parallel, memory_bytes, None)
        first_error: InfeasibleError | None = None
        for doubling in range(MAX_ASPECT_DOUBLINGS + 1):
            ratio = self.aspect_ratio * 2**doubling
            stack = stack_for_params(self.budget.params, self.budget.seq_len, aspect_ratio=ratio,
                                     head_dim=self.head_dim, causal=self.stack.layer.causal)
            try:
                return self._build(stack, parallel, memory_bytes, ratio)
            except InfeasibleError as error:
                first_error = first_error or error
        raise InfeasibleError(f"{first_error} (also with aspect ratios up to "
                              f"{self.aspect_ratio * 2**MAX_ASPECT_DOUBLINGS:g})")

    def _build(self, stack: TransformerStack, parallel: ParallelConfig, memory_bytes: int,
               aspect_ratio: float | None) -> Workload:
        workload = build_megatron2021_workload(self.name, Megatron2021Model(stack), self.budget, parallel,
                                               memory_bytes, global_batch=self.global_batch, precision=self.precision,
                                               widen_heads=self.from_loss and self.widen_heads,
                                               tp_all_reduces=self.tp_all_reduces)
        workload.plan["shape_source"] = "target_loss" if self.from_loss else "given"
        workload.plan["aspect_ratio"] = aspect_ratio if aspect_ratio else stack.layer.d_model / stack.layers
        return workload

    def _build_table9(self, parallel: ParallelConfig, memory_bytes: int) -> Workload:
        """Table 9's row as printed: its shape, TP (MP level), DP, global batch and steps."""
        row = self.table9_row
        fixed = replace(parallel, tensor=row.mp, data=row.dp, micro_batch=row.global_batch // row.dp,
                        max_gpus=max(parallel.max_gpus, row.gpus))
        workload = build_megatron2021_workload(self.name, Megatron2021Model(self.stack), None, fixed, memory_bytes,
                                               global_batch=row.global_batch, num_steps=int(row.steps),
                                               precision=self.precision, tp_all_reduces=self.tp_all_reduces)
        workload.plan.update({"shape_source": "ramp_table9", "target_loss": self.budget.loss,
                              "aspect_ratio": self.stack.layer.d_model / self.stack.layers})
        return workload
