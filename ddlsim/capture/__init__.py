"""capture/: the user's own PyTorch program, run once on a fake process group with fake tensors.

    program = ddlsim.capture(build, mesh_shape=(8, 8), mesh_dim_names=("dp", "tp"))
    program.collectives, program.compute          # pandas DataFrames
    result = ddlsim.simulate(program, fabric="superpod", device="h100_sxm", collective="best")

`capture` (api.py) records every aten op and collective of one training step (session.py,
recorder.py, streams.py); `simulate` (simulate.py) turns the record into the iteration graph of
`ddlsim.training` (graph.py) priced by `ddlsim.compute` (pricing.py) and `ddlsim.network`.
`model=program` (model.py) is the command-line door. The names below are imported on first use,
so that importing this package (and `ddlsim.capture.model`, which registers `model=program`)
does not import torch. The package itself is callable: ``ddlsim.capture(build, ...)`` is
`ddlsim.capture.api.capture`, whether or not the subpackage has been imported. docs/capture.md
has the details.
"""

from __future__ import annotations

import sys
import types
from importlib import import_module
from typing import Any

_EXPORTS = {
    "capture": "ddlsim.capture.api",
    "CapturedProgram": "ddlsim.capture.program",
    "simulate": "ddlsim.capture.simulation",
    "ProgramResult": "ddlsim.capture.simulation",
    "splits": "ddlsim.capture.moe",
    "batch": "ddlsim.capture.throughput",
    "CAPTURES": "ddlsim.capture.cache",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'ddlsim.capture' has no attribute {name!r}")
    return getattr(import_module(module), name)


class _CallableModule(types.ModuleType):
    """This package, callable as `capture` (so ``ddlsim.capture(...)`` works once it is imported)."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return import_module("ddlsim.capture.api").capture(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
