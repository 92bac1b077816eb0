"""ddlsim: how long distributed deep-learning training takes on a given network fabric, and why.

The public names below load on first use (module `__getattr__`), so that `import ddlsim` stays
light: it never loads torch, torchrec or Hydra. Which room may load what is in CONTRIBUTING.md
("Imports"); `tests/test_imports.py` checks it in fresh processes.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
from typing import Any

from ddlsim.core.errors import ConfigError, DdlsimError, InfeasibleError

# public name -> the module that defines it. Add a name here (not an import above) to export it.
_LAZY: dict[str, str] = {
    "build_components": "ddlsim.app.runner",  # composition (Hydra) only for lists of overrides
    "compose": "ddlsim.app.runner",
    "run": "ddlsim.app.public_run",  # lists of overrides through one process-wide Session
    "run_point": "ddlsim.app.runner",
    "Session": "ddlsim.app.session",  # composes with Hydra once per set of group choices
    "ParallelConfig": "ddlsim.workload.parallel",
    "architecture_params": "ddlsim.workload.vision",  # vision loads torch (image models as nn.Modules)
    "gradient_bytes": "ddlsim.workload.vision",
    "build_equivalent_shard": "ddlsim.compute.equivalent_registry",  # loads torch when it builds a shard
    "CollectiveEstimator": "ddlsim.network.estimator",
    "ReductionModel": "ddlsim.network.reduction",
    "estimate_collective": "ddlsim.network.api",
    "make_fabric": "ddlsim.network.api",
    "clear_caches": "ddlsim.core.caches",
    "simulate": "ddlsim.capture",  # the capture room loads torch when it captures or simulates
    "CapturedProgram": "ddlsim.capture",
}

# Modules that moved into ddlsim/core and ddlsim/app (docs/architecture.md): the old paths still import,
# as the same module objects, for code written against them (``from ddlsim.errors import ConfigError``).
_MOVED: dict[str, str] = {
    "ddlsim.caches": "ddlsim.core.caches", "ddlsim.datasheets": "ddlsim.core.datasheets",
    "ddlsim.errors": "ddlsim.core.errors", "ddlsim.files": "ddlsim.core.files", "ddlsim.papers": "ddlsim.core.papers",
    "ddlsim.registry": "ddlsim.core.registry", "ddlsim.resources": "ddlsim.core.resources",
    "ddlsim.types": "ddlsim.core.types", "ddlsim.units": "ddlsim.core.units",
    "ddlsim.cli": "ddlsim.app.cli", "ddlsim.runner": "ddlsim.app.runner", "ddlsim.session": "ddlsim.app.session",
}


class _MovedModules(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Imports a moved module's old path as its new module (the same object, so one set of caches)."""

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        return importlib.util.spec_from_loader(fullname, self) if fullname in _MOVED else None

    def create_module(self, spec: Any) -> Any:
        return importlib.import_module(_MOVED[spec.name])

    def exec_module(self, module: Any) -> None:  # the module ran when it was imported under its new path
        pass


if not any(isinstance(finder, _MovedModules) for finder in sys.meta_path):
    sys.meta_path.insert(0, _MovedModules())  # before path finders: the old files are gone

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
