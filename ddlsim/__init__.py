"""ddlsim: how long distributed deep-learning training takes on a given network fabric, and why.

The public names below load on first use (module `__getattr__`), so that `import ddlsim` stays
light: it never loads torch, torchrec or Hydra. Which room may load what is in CONTRIBUTING.md
("Imports"); `tests/test_imports.py` checks it in fresh processes.
"""

from __future__ import annotations

import importlib
from typing import Any

from ddlsim.errors import ConfigError, DdlsimError, InfeasibleError

# public name -> the module that defines it. Add a name here (not an import above) to export it.
_LAZY: dict[str, str] = {
    "build_components": "ddlsim.runner",  # composition (Hydra) only for lists of overrides
    "compose": "ddlsim.runner",
    "run": "ddlsim.runner",
    "run_point": "ddlsim.runner",
    "Session": "ddlsim.session",  # composes with Hydra once per set of group choices
    "ParallelConfig": "ddlsim.workload.parallel",
    "architecture_params": "ddlsim.workload.vision",  # vision loads torch (image models as nn.Modules)
    "gradient_bytes": "ddlsim.workload.vision",
    "build_equivalent_shard": "ddlsim.workload.equivalent",  # loads torch when it builds a shard
    "CollectiveEstimator": "ddlsim.network.estimator",
    "ReductionModel": "ddlsim.network.reduction",
    "estimate_collective": "ddlsim.network.api",
    "make_fabric": "ddlsim.network.api",
    "clear_caches": "ddlsim.caches",
    "simulate": "ddlsim.capture",  # the capture room loads torch when it captures or simulates
    "CapturedProgram": "ddlsim.capture",
}

__all__ = ["ConfigError", "DdlsimError", "InfeasibleError", "capture", *_LAZY]
__version__ = "0.1.0"

def __getattr__(name: str) -> Any:
    if name == "capture":  # the capture room itself, callable as ``ddlsim.capture(build, ...)``
        return importlib.import_module("ddlsim.capture")
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'ddlsim' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY, "capture"})
