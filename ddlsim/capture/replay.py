"""Measured compute: one captured rank's ops replayed on a real device under `torch.profiler`.

At capture time every compute record keeps its op overload (``torch_op``) and its arguments
(``args``: tensors as shape, stride and dtype; numbers, strings and lists as they are).
`measure_ops` rebuilds each distinct op once on `device` with random inputs of those shapes, runs
it `repeats` times inside a profiler annotation, and takes the device time per call that the
profiler attributes to that annotation. The result maps each op's pricing key
(`pricing.OpKey`) to seconds; `SegmentPricer` uses it for every segment whose ops were all
measured. Ops that cannot be rebuilt (arguments that are not plain data) keep their roofline
price, and the result row's ``compute_source`` says ``roofline`` for them.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import torch

from ddlsim.capture.program import CapturedProgram
from ddlsim.core.errors import InfeasibleError

UNREPLAYABLE = ""


def encode_arguments(args: tuple, kwargs: dict) -> str:
    """The op's arguments as JSON, or ``""`` when one of them is not plain data."""

    def encode(value: Any) -> Any:
        if isinstance(value, torch.Tensor):
            return {"tensor": [list(value.shape), list(value.stride()), str(value.dtype).removeprefix("torch.")]}
        if isinstance(value, (bool, int, float, str)) or value is None:
            return value
        if isinstance(value, (list, tuple)):
            return [encode(item) for item in value]
        if isinstance(value, torch.dtype):
            return {"dtype": str(value).removeprefix("torch.")}
        if isinstance(value, (torch.device, torch.layout, torch.memory_format)):
            return {"skip": str(value)}
        raise TypeError(type(value).__name__)

    try:
        return json.dumps([encode(list(args)), {key: encode(value) for key, value in kwargs.items()}])
    except (TypeError, ValueError):
        return UNREPLAYABLE


def decode_arguments(text: str, device: str) -> tuple[list, dict]:
    def decode(value: Any) -> Any:
        if isinstance(value, dict) and "tensor" in value:
            shape, stride, dtype = value["tensor"]
            tensor = torch.empty_strided(shape, stride, dtype=getattr(torch, dtype), device=device)
            return tensor.uniform_() if tensor.is_floating_point() else tensor.zero_()
        if isinstance(value, dict) and "dtype" in value:
            return getattr(torch, value["dtype"])
        if isinstance(value, dict) and "skip" in value:
            return torch.device(device) if value["skip"].startswith(("cpu", "cuda")) else None
        if isinstance(value, list):
            return [decode(item) for item in value]
        return value

    args, kwargs = json.loads(text)
    return decode(args), {key: decode(value) for key, value in kwargs.items()}


def resolve_op(name: str) -> Any:
    namespace, packet, overload = name.split(".")
    return getattr(getattr(getattr(torch.ops, namespace), packet), overload)


def measure_ops(program: CapturedProgram, device: str = "cuda", rank: int | None = None,
                repeats: int = 5) -> Mapping[tuple, float]:
    """Seconds per call of each distinct replayable op of one captured rank (see the module docstring)."""
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise InfeasibleError("measured compute replays the captured ops on a GPU, and this machine has none; "
                              "price with the roofline (or the fitted kernel roofline) instead")
    from ddlsim.capture.graph import OP_KEY_COLUMNS

    events = program.events
    rows = events[(events.kind == "compute") & (events["rank"] == (program.ranks[0] if rank is None else rank))
                  & (events.args != UNREPLAYABLE)]
    unique = rows.drop_duplicates(subset=["torch_op", "args"])
    activities = [torch.profiler.ProfilerActivity.CPU]
    if device.startswith("cuda"):
        activities.append(torch.profiler.ProfilerActivity.CUDA)
    calls: dict[str, tuple] = {}
    with torch.profiler.profile(activities=activities) as profile:
        for index, row in enumerate(unique.itertuples(index=False)):
            try:
                op, (args, kwargs) = resolve_op(row.torch_op), decode_arguments(row.args, device)
                op(*args, **kwargs)  # warm-up
            except Exception:  # an op that needs real values (indices in range, ...) keeps its roofline price
                continue
            label = f"ddlsim_op_{index}"
            with torch.profiler.record_function(label):
                for _ in range(repeats):
                    op(*args, **kwargs)
            calls[label] = tuple(getattr(row, column) for column in OP_KEY_COLUMNS)
        if device.startswith("cuda"):
            torch.cuda.synchronize()
    measured: dict[tuple, float] = {}
    for event in profile.key_averages():
        key = calls.get(event.key)
        if key is not None:
            total_us = getattr(event, "device_time_total", 0.0) or getattr(event, "cpu_time_total", 0.0)
            measured[key] = 1e-6 * total_us / repeats
    return measured
