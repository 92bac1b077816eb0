"""What a workload's plan says about its pipeline: stages, micro-batches and virtual stages.

Every schedule, the dispatcher that picks one and the closed-form engines read these plan keys
through the functions below; a plan without them is one stage, one micro-batch, one chunk.
"""

from __future__ import annotations

from ddlsim.core.work import Workload

PIPELINE_PLAN_KEYS = ("pp_degree", "pipeline_degree")
MICRO_BATCH_PLAN_KEY = "micro_batches"
VIRTUAL_STAGES_PLAN_KEY = "virtual_stages"


def pipeline_stages(workload: Workload) -> int:
    for key in PIPELINE_PLAN_KEYS:
        if key in workload.plan:
            return int(workload.plan[key])  # type: ignore[call-overload]
    return 1


def micro_batches(workload: Workload) -> int:
    return int(workload.plan.get(MICRO_BATCH_PLAN_KEY, 1))  # type: ignore[call-overload]


def virtual_stages(workload: Workload) -> int:
    return int(workload.plan.get(VIRTUAL_STAGES_PLAN_KEY, 1))  # type: ignore[call-overload]


def has_micro_batch_blocks(workload: Workload) -> bool:
    """True for a workload written per micro-batch (`TaskBlock.per_micro_batch`), such as GPT's."""
    return any(block.per_micro_batch for block in workload.blocks)
