"""The cases of the Megatron-2021 snapshot (`test_megatron2021_snapshot.py`) and how a workload is
written down for it.

    PYTHONPATH=. python tests/workload/megatron2021_cases.py   # rewrites megatron2021_snapshot.json

Each case builds a workload through a model's config face (`model=megatron`, the encoders of
`model=hf`, TopoOpt's BERT) and records it field by field: blocks, tasks, collective calls,
signatures, FLOP and byte counts, the plan fields in order, or the error a plan raises.
The JSON next to this file was written ONCE, by the generator these models used before issue 31
merged it into `ddlsim/workload/transformer/` (`megatron_partition.py` and `megatron_tasks.py`);
do not regenerate it to make the test pass.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from ddlsim.core.errors import ConfigError, InfeasibleError
from ddlsim.core.registry import MODELS
from ddlsim.core.types import CollectiveCall, GroupLayout
from ddlsim.core.work import ComputeTask, Workload
from ddlsim.workload.parallel import ParallelConfig

SNAPSHOT = Path(__file__).with_name("megatron2021_snapshot.json")
GIB = 2**30
LOSSES = (3.0, 2.5, 2.0, 1.8, 1.5)
PARALLEL = {  # name -> ParallelConfig overrides
    "default": {},
    "sequence_parallel": {"sequence_parallel": True},
    "no_checkpointing": {"activation_checkpointing": False},
    "recompute_none": {"recompute": "none"},
    "offload": {"activation_offload": True},
    "tensor_8": {"tensor": 8},
    "data_4_local_2": {"data": 4, "micro_batch": 2},
    "any_data_degree": {"power_of_two": False},
    "max_gpus_64": {"max_gpus": 64},
}
MEGATRON_VARIANTS = {  # name -> (model overrides, parallel overrides, memory GiB)
    "widen_heads_1.2": ({"target_loss": 1.2, "widen_heads": True}, {}, 80),
    "widen_heads_1.0": ({"target_loss": 1.0, "widen_heads": True}, {}, 80),
    "widen_heads_1.0_offload": ({"target_loss": 1.0, "widen_heads": True}, {"activation_offload": True}, 80),
    "ramp_7_2_1": ({"target_loss": 2.0, "tp_all_reduces": "ramp_7_2_1"}, {"tensor": 4}, 80),
    "ramp_7_2_1_sp": ({"target_loss": 2.0, "tp_all_reduces": "ramp_7_2_1"}, {"tensor": 4,
                                                                             "sequence_parallel": True}, 80),
    "causal": ({"target_loss": 2.5, "causal": True}, {}, 80),
    "bf16_40gib": ({"target_loss": 2.5, "precision": "bf16"}, {}, 40),
    "global_batch_96": ({"target_loss": 2.5, "global_batch": 96}, {}, 80),
    "given_shape": ({"target_loss": 0, "d_model": 2048, "heads": 16, "layers": 24, "ffn_hidden": 6144}, {}, 80),
    "given_shape_loss": ({"target_loss": 2.2, "d_model": 1024, "heads": 16, "layers": 12}, {"tensor": 2}, 80),
    "table9_2.0": ({"target_loss": 2.0, "shape_source": "ramp_table9"}, {}, 80),
    "table9_1.0": ({"target_loss": 1.0, "shape_source": "ramp_table9"}, {"activation_offload": True}, 80),
    "aspect_32_head_64": ({"target_loss": 2.0, "aspect_ratio": 32.0, "head_dim": 64}, {}, 80),
    "too_small_memory": ({"target_loss": 1.5}, {"max_gpus": 8}, 16),
}
HF_ENCODERS = ("bert-base-uncased", "bert-large-uncased")
HF_PARALLEL = {
    "default": {},
    "tensor_2": {"tensor": 2},
    "tensor_4_sp": {"tensor": 4, "sequence_parallel": True},
    "no_checkpointing": {"activation_checkpointing": False},
    "offload_data_8": {"activation_offload": True, "data": 8},
}
TOPOOPT_BERT = ("sec5_3", "sec5_6")


def cases() -> dict[str, tuple[str, dict[str, Any], dict[str, Any], int]]:
    """name -> (model option, model overrides, parallel overrides, device memory in GiB)."""
    table: dict[str, tuple[str, dict[str, Any], dict[str, Any], int]] = {}
    for loss in LOSSES:
        for name, parallel in PARALLEL.items():
            table[f"megatron/{loss}/{name}"] = ("megatron", {"target_loss": loss}, parallel, 80)
    for name, (model, parallel, memory) in MEGATRON_VARIANTS.items():
        table[f"megatron/{name}"] = ("megatron", model, parallel, memory)
    for config in HF_ENCODERS:
        for name, parallel in HF_PARALLEL.items():
            table[f"hf/{config}/{name}"] = ("hf", {"config": config, "global_batch": 512, "num_steps": 1000},
                                            parallel, 80)
    for sizes in TOPOOPT_BERT:
        table[f"topoopt/bert/{sizes}"] = ("topoopt", {"model": "bert", "sizes": sizes, "num_servers": 8}, {}, 40)
    return table


def build(option: str, model: dict[str, Any], parallel: dict[str, Any], memory_gib: int) -> Workload:
    return MODELS.make(option, **model).build_workload(ParallelConfig(**parallel), memory_gib * GIB)


def _number(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return {"float": repr(value)}
    return value


def _group(group: GroupLayout) -> list[Any]:
    return [group.size, group.stride, group.num_ranks]


def _task(task: Any, signatures: list[str]) -> dict[str, Any]:
    if isinstance(task, ComputeTask):
        key = task.signature.key()
        if key not in signatures:
            signatures.append(key)
        return {"compute": task.name, "phase": task.phase.value, "signature": signatures.index(key),
                "flop": task.flop, "memory_bytes": task.memory_bytes, "count": task.count}
    assert isinstance(task, CollectiveCall), task
    return {"collective": task.name, "op": task.op.value, "size_bytes": task.size_bytes, "group": _group(task.group),
            "phase": task.phase.value, "count": task.count, "root": task.root}


def record(workload: Workload) -> dict[str, Any]:
    """Every field of `workload`, in order, as JSON values (JSON keeps int, float and bool apart)."""
    for key, value in workload.plan.items():
        assert type(value) in (int, float, bool, str), (key, type(value))
    signatures: list[str] = []  # `ShardSignature.key()`s, which tasks name by index
    blocks = [{"name": block.name, "repeat": block.repeat, "stages": list(block.stages),
               "per_micro_batch": block.per_micro_batch, "tasks": [_task(task, signatures) for task in block.tasks]}
              for block in workload.blocks]
    return {
        "name": workload.name, "num_ranks": workload.num_ranks, "global_batch": workload.global_batch,
        "num_steps": workload.num_steps,
        "signatures": signatures, "blocks": blocks,
        "plan": [[key, _number(value)] for key, value in workload.plan.items()],
    }


def outcome(option: str, model: dict[str, Any], parallel: dict[str, Any], memory_gib: int) -> dict[str, Any]:
    """The recorded workload, or the error the plan raises."""
    try:
        return record(build(option, model, parallel, memory_gib))
    except (ConfigError, InfeasibleError) as error:
        return {"error": type(error).__name__, "message": str(error)}


def main() -> None:
    snapshot = {name: outcome(*case) for name, case in cases().items()}
    lines = ",\n".join(f"{json.dumps(name)}: {json.dumps(value, separators=(',', ':'))}"
                       for name, value in snapshot.items())
    SNAPSHOT.write_text("{\n" + lines + "\n}\n", encoding="utf-8")
    print(f"wrote {len(snapshot)} cases to {SNAPSHOT}")


if __name__ == "__main__":
    main()
