"""ddlsim: how long distributed deep-learning training takes on a given network fabric, and why."""

from ddlsim.errors import ConfigError, DdlsimError, InfeasibleError
from ddlsim.network import CollectiveEstimator, ReductionModel, estimate_collective, make_fabric
from ddlsim.runner import build_components, compose, run, run_point
from ddlsim.workload import ParallelConfig, architecture_params, build_equivalent_shard, gradient_bytes

__all__ = ["ConfigError", "DdlsimError", "InfeasibleError", "build_components", "compose", "run", "run_point",
           "ParallelConfig", "architecture_params", "build_equivalent_shard", "gradient_bytes",
           "CollectiveEstimator", "ReductionModel", "estimate_collective", "make_fabric"]
__version__ = "0.1.0"


def __getattr__(name: str):
    """`capture`, `simulate` and `CapturedProgram` are imported on first use (they need torch)."""
    if name in ("capture", "simulate", "CapturedProgram"):
        from importlib import import_module

        room = import_module("ddlsim.capture")
        return room if name == "capture" else getattr(room, name)
    raise AttributeError(f"module 'ddlsim' has no attribute {name!r}")
