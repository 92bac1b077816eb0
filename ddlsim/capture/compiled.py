"""``torch.compile`` under a capture: the eager ops are recorded, and the user is told so once.

A capture records the ops a program issues on fake tensors; a compiled graph would fuse some of
them into Triton kernels, which the capture cannot see. Instead of tracing through Dynamo (slow,
and its fused kernels have no recorded shapes), ``torch.compile`` returns the function or module
unchanged while the capture runs, and a module compiled before it runs its original module. The
memory-bound runs a compiler fuses are priced as one kernel each by ``compute.fusion``
(docs/capture.md), which is on by default for captures.
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Iterator
from typing import Any

import torch

MESSAGE = ("ddlsim: torch.compile is not traced under a capture; its eager ops are recorded "
           "(compute.fusion prices the fused memory-bound runs)")


class CompileIgnored(UserWarning):
    """A compiled function or module ran eagerly under a capture."""


@contextlib.contextmanager
def compile_runs_eager() -> Iterator[None]:
    from torch._dynamo.eval_frame import OptimizedModule

    told: list[bool] = []

    def tell() -> None:
        if not told:
            told.append(True)
            warnings.warn(MESSAGE, CompileIgnored, stacklevel=3)

    original_compile, original_call = torch.compile, OptimizedModule.__call__

    def compile_eagerly(model: Any = None, *args: Any, **kwargs: Any) -> Any:
        tell()
        if model is None:  # used as @torch.compile(...)
            return lambda function: function
        return model

    def call_original(self: Any, *args: Any, **kwargs: Any) -> Any:
        tell()
        return self._orig_mod(*args, **kwargs)

    torch.compile, OptimizedModule.__call__ = compile_eagerly, call_original
    try:
        yield
    finally:
        torch.compile, OptimizedModule.__call__ = original_compile, original_call
