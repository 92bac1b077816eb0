"""Helpers: write hand-made profile rows for a device, for store and model tests."""

from __future__ import annotations

from pathlib import Path

from ddlsim.compute.profile_file import encode_shape, format_number, profile_path, write_rows
from ddlsim.core.types import Phase
from ddlsim.core.work import ShardSignature


def layer(d_model: int, batch: int = 2, *, kind: str = "megatron_layer", precision: str = "fp16",
          checkpointing: bool = True) -> ShardSignature:
    return ShardSignature(kind, (("d_model", d_model), ("heads", 4)), batch, precision, checkpointing)


def write_profile(root: Path, device: str, signature: ShardSignature, phase: Phase | str, time_s: float,
                  flop: float, memory_bytes: float = 0.0) -> Path:
    path = profile_path(root, device, signature.model_kind)
    write_rows(path, [{
        "signature_key": signature.key(), "model_kind": signature.model_kind, "shape": encode_shape(signature),
        "local_batch": str(signature.local_batch), "precision": signature.precision.value,
        "checkpointing": "true" if signature.checkpointing else "false", "phase": Phase(phase).value,
        "device": device, "time_s": format_number(time_s), "counted_flop": format_number(flop),
        "counted_bytes": format_number(memory_bytes), "task_flop": format_number(flop),
        "task_memory_bytes": format_number(memory_bytes), "kernels": "5",
    }], replace=True)
    return path
