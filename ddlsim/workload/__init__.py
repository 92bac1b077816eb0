"""workload/: what is trained and how it is split, as one iteration of tasks and collective calls.

Every registered model (``model=`` group) has ``build_workload(parallel, memory_bytes)``. The
names below are the room's public API; heavier modules load on first use.
"""

from __future__ import annotations

import importlib
from typing import Any

from ddlsim.workload.parallel import ParallelConfig

_LAZY = {
    "EquivalentShard": "ddlsim.compute.equivalent_registry",
    "build_equivalent_shard": "ddlsim.compute.equivalent_registry",
    "register_equivalent": "ddlsim.compute.equivalent_registry",
    "LayerShape": "ddlsim.workload.transformer.layer",
    "TransformerStack": "ddlsim.workload.transformer.stack",
    "TrainingBudget": "ddlsim.workload.scaling_laws",
    "Megatron2021Model": "ddlsim.workload.transformer.megatron2021_plan",
    "partition_megatron2021": "ddlsim.workload.transformer.megatron2021_plan",
    "build_megatron2021_workload": "ddlsim.workload.transformer.workload",
    "build_decoder_workload": "ddlsim.workload.transformer.workload",
    "DlrmShape": "ddlsim.workload.dlrm_arch",
    "partition_dlrm": "ddlsim.workload.dlrm_partition",
    "architecture_params": "ddlsim.workload.vision",
    "gradient_bytes": "ddlsim.workload.vision",
    "forward_flop_per_sample": "ddlsim.workload.vision",
    "hf_shapes": "ddlsim.workload.models.hf",
    "DecoderShape": "ddlsim.workload.transformer.shape",
    "MoeShape": "ddlsim.workload.transformer.shape",
    "partition_decoder": "ddlsim.workload.transformer.plan",
    "ParallelLayout": "ddlsim.workload.transformer.layout",
    "PlanCheck": "ddlsim.workload.feasibility",
    "check_plan": "ddlsim.workload.feasibility",
}

__all__ = ["ParallelConfig", *_LAZY]


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module 'ddlsim.workload' has no attribute {name!r}")
    value = getattr(importlib.import_module(_LAZY[name]), name)
    globals()[name] = value
    return value
