"""``device="cuda"`` in a captured program means the capture's fake device.

A capture runs on the CPU build of torch with fake tensors, and prices the program on the GPU
that `ddlsim.simulate` names. Programs written for a GPU create tensors with ``device="cuda"``
(or ``torch.device("cuda", i)``), move them with ``.cuda()`` / ``.to("cuda")`` and build modules
with ``device=``; the CPU build refuses all of these before fake tensors see them. While the
capture runs, a torch function mode rewrites a CUDA device argument to the CPU, where the fake
tensors live, and makes ``.cuda()`` a no-op, for tensors and modules alike (a module's own
``.cuda()`` would try to swap its fake parameters, which torch refuses).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import torch
from torch.overrides import TorchFunctionMode

_CPU = torch.device("cpu")


def _is_cuda(value: Any) -> bool:
    if isinstance(value, torch.device):
        return value.type == "cuda"
    return isinstance(value, str) and (value == "cuda" or value.startswith("cuda:"))


def _on_cpu(value: Any) -> Any:
    return _CPU if _is_cuda(value) else value


class CudaOnFakeDevice(TorchFunctionMode):
    """Rewrite CUDA devices in torch calls to the CPU (the fake tensors' device)."""

    def __torch_function__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        kwargs = dict(kwargs or {})
        if func is torch.Tensor.cuda:
            return args[0]
        if "device" in kwargs:
            kwargs["device"] = _on_cpu(kwargs["device"])
        if func is torch.Tensor.to:
            args = tuple(_on_cpu(argument) for argument in args)
        return func(*args, **kwargs)


@contextlib.contextmanager
def cuda_on_fake_device() -> Iterator[None]:
    module_cuda, module_to = torch.nn.Module.cuda, torch.nn.Module.to

    def cuda(self: torch.nn.Module, device: Any = None) -> torch.nn.Module:
        return self

    def to(self: torch.nn.Module, *args: Any, **kwargs: Any) -> torch.nn.Module:
        args = tuple(argument for argument in args if not _is_cuda(argument))
        if _is_cuda(kwargs.get("device")):
            kwargs.pop("device")
        return module_to(self, *args, **kwargs) if args or kwargs else self

    torch.nn.Module.cuda, torch.nn.Module.to = cuda, to
    try:
        with CudaOnFakeDevice():
            yield
    finally:
        torch.nn.Module.cuda, torch.nn.Module.to = module_cuda, module_to
