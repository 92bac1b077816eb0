"""CUDA's choice of kernels where the CPU takes another path, while a capture runs.

The capture runs the program on the CPU, but prices it as a GPU would run it. Where PyTorch's
CPU and CUDA code paths issue different ops for the same call, the capture takes the CUDA one:

- dropout: CUDA runs ``native_dropout`` (one kernel drawing the mask and scaling); the CPU
  decomposes it into ``bernoulli_``, ``div_`` and ``mul``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import torch


@contextlib.contextmanager
def cuda_code_paths() -> Iterator[None]:
    variable_functions = torch._VF
    had = "dropout" in variable_functions.__dict__
    original = variable_functions.dropout

    def dropout(input: torch.Tensor, p: float, train: bool) -> Any:
        if train and 0 < p < 1 and input.numel() > 0 and input.is_floating_point():
            return torch.native_dropout(input, p, train)[0]
        return original(input, p, train)

    variable_functions.dropout = dropout
    try:
        yield
    finally:
        if had:
            variable_functions.dropout = original
        else:
            del variable_functions.dropout
