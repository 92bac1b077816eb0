"""Whether a plan is feasible for a model, without pricing it: the check a plan search prunes by.

    check = check_plan(model, parallel, memory_bytes)
    check.feasible, check.kind, check.reason, check.memory_per_gpu_bytes, check.over_bytes

For decoder LLMs (`model=gpt`, `model=hf` decoders) this is the partition alone: the rules of
the plan (`ConfigError`: TP divides heads and KV heads, EP divides the experts and DP x CP, CP
divides the sequence, the degrees multiply to the GPUs, ...) and the memory of every pipeline
stage, pure arithmetic at tens of microseconds per plan. Other models build their workload (no
pricing either) and report the error it raises.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ddlsim.core.errors import ConfigError, InfeasibleError
from ddlsim.core.types import Precision
from ddlsim.workload.parallel import ParallelConfig
from ddlsim.workload.transformer.memory import check_fits
from ddlsim.workload.transformer.plan import partition_decoder
from ddlsim.workload.transformer.shape import DecoderShape


@dataclass(frozen=True)
class PlanCheck:
    """The verdict on one plan. `kind` is ``ok``, ``config`` (a rule is broken: `reason` is the
    `ConfigError` message naming the key) or ``memory`` (it does not fit: `reason` says which
    stage needs how much, and `over_bytes` by how much it exceeds the device)."""

    feasible: bool
    kind: str
    reason: str = ""
    memory_per_gpu_bytes: int = 0
    device_memory_bytes: int = 0
    stage_memory_bytes: tuple[int, ...] = ()
    num_gpus: int = 0

    @property
    def over_bytes(self) -> int:
        return max(0, self.memory_per_gpu_bytes - self.device_memory_bytes) if self.memory_per_gpu_bytes else 0


def check_decoder_plan(shape: DecoderShape, parallel: ParallelConfig, memory_bytes: int,
                       global_batch: int = 0, precision: Precision = Precision.BF16,
                       grad_precision: Precision | None = None) -> PlanCheck:
    """Rules and memory of a decoder plan, without building tasks or pricing anything."""
    try:
        plan = partition_decoder(shape, parallel, memory_bytes, global_batch, check_memory=False,
                                 precision=precision, grad_precision=grad_precision)
    except ConfigError as error:
        return PlanCheck(False, "config", str(error), device_memory_bytes=memory_bytes)
    except InfeasibleError as error:
        return PlanCheck(False, "memory", str(error), device_memory_bytes=memory_bytes)
    stage_bytes = plan.stage_memory_bytes
    try:
        check_fits(plan.stages, plan.layout, plan.options, memory_bytes)
    except InfeasibleError as error:
        return PlanCheck(False, "memory", str(error), max(stage_bytes), memory_bytes, stage_bytes, plan.num_gpus)
    return PlanCheck(True, "ok", "", max(stage_bytes), memory_bytes, stage_bytes, plan.num_gpus)


def check_plan(model: Any, parallel: ParallelConfig, memory_bytes: int) -> PlanCheck:
    """Feasibility of `parallel` for any registered model (see the module docstring)."""
    if isinstance(getattr(model, "decoder", None), DecoderShape):
        return model.check_plan(parallel, memory_bytes)
    try:
        workload = model.build_workload(parallel, memory_bytes)
    except ConfigError as error:
        return PlanCheck(False, "config", str(error), device_memory_bytes=memory_bytes)
    except InfeasibleError as error:
        return PlanCheck(False, "memory", str(error), device_memory_bytes=memory_bytes)
    used = int(workload.plan.get("memory_per_gpu_bytes", 0))  # type: ignore[call-overload]
    return PlanCheck(True, "ok", "", used, memory_bytes, (used,), workload.num_ranks)
