"""The public surface: `make_fabric` and `estimate_collective`.

    from ddlsim import estimate_collective, make_fabric
    r = estimate_collective(op="all_reduce", size_bytes=10**9, num_ranks=1024,
                            fabric="superpod", algorithm="ring")
    r.time_s, r.num_steps, r.latency_s, r.transfer_s, r.compute_s, r.algorithm

`make_fabric(name, **params)` takes the parameter names and unit strings of the fabric's YAML
config (``make_fabric("superpod", nic_bandwidth="2.4Tbps")``); `name` may also be a variant in
``configs/fabric/`` (``make_fabric("superpod_1to1")``).
"""

from __future__ import annotations

import sys
from typing import Any

from omegaconf import OmegaConf

from ddlsim.core.caches import PROCESS_CACHES
from ddlsim.core.errors import ConfigError
from ddlsim.core.registry import FABRICS
from ddlsim.core.resources import config_file
from ddlsim.core.types import CollectiveEstimate, CollectiveOp, GroupLayout
from ddlsim.network.collectives.base import CollectiveAlgorithm
from ddlsim.network.estimator import CollectiveEstimator
from ddlsim.network.fabrics.base import Fabric
from ddlsim.network.reduction import DEFAULT_DEVICE, ReductionModel

FABRIC_CONFIG_DIR = config_file("fabric")


def _variant(name: str) -> dict[str, Any] | None:
    """The settings of a YAML variant in configs/fabric/, its `defaults` chain resolved (a variant
    may build on another variant, e.g. topoopt_ramp_per_step on topoopt_ramp)."""
    path = FABRIC_CONFIG_DIR / f"{name}.yaml"
    if not path.is_file():
        return None
    node = OmegaConf.to_container(OmegaConf.load(path), resolve=True)
    defaults = node.pop("defaults", [])
    base = next((item for item in defaults if isinstance(item, str) and item != "_self_"), None)
    settings = dict(node)
    if base is not None and base not in FABRICS:
        inherited = _variant(base)
        if inherited is None:
            raise ConfigError("fabric", name, f"{path} builds on {base!r}, which is neither a registered fabric "
                                              f"nor a variant in {FABRIC_CONFIG_DIR}")
        return {**inherited, **settings}
    if "name" not in settings:
        if base is None:
            raise ConfigError("fabric", name, f"{path} names no registered fabric in its defaults")
        settings["name"] = base
    return settings


def make_fabric(name: str, **params: Any) -> Fabric:
    """Build a fabric by registered name or YAML variant, with YAML-style parameters."""
    if name in FABRICS:
        return FABRICS.make(name, **params)
    settings = _variant(name)
    if settings is None:
        raise ConfigError("fabric.name", name, f"unknown fabric; choose one of {', '.join(FABRICS.names())} "
                                               f"or a variant in {FABRIC_CONFIG_DIR}")
    return FABRICS.build({**settings, **params})


# The process's fabrics by name and estimators by (fabric, algorithm, device), for `estimate_collective`.
_NAMED_FABRICS = PROCESS_CACHES.memo("network.named_fabrics", maxsize=32)
_ESTIMATORS = PROCESS_CACHES.memo("network.estimators", maxsize=64)


def clear_caches() -> None:
    """Forget every cache of the network room: the process's `network.*` memos (built fabrics and
    estimators, shift patterns, hierarchies, RAMP plans and prices, ...) and the RAMP job shapes.
    Estimators a caller holds keep their own caches (`CollectiveEstimator.clear`)."""
    PROCESS_CACHES.clear(prefix="network.")
    placement = sys.modules.get("ddlsim.network.fabrics.ramp.placement")
    job_dims = getattr(placement, "job_dims", None)
    if hasattr(job_dims, "cache_clear"):
        job_dims.cache_clear()


def estimate_collective(op: CollectiveOp | str, size_bytes: int | str, num_ranks: int | None = None,
                        fabric: str | Fabric = "ideal", algorithm: str | CollectiveAlgorithm = "best", *,
                        layout: GroupLayout | None = None, root: int = 0,
                        device: ReductionModel | str | None = DEFAULT_DEVICE) -> CollectiveEstimate:
    """Time of one collective: every group of `layout` (or one group of `num_ranks`) runs `op` at once.

    `size_bytes` follows nccl-tests (the whole buffer each rank holds; see
    `ddlsim.core.types.CollectiveCall`). `device` prices the local reductions (a datasheet name, a
    `ReductionModel`, or None to leave them out). Raises `ConfigError` for invalid input and
    `InfeasibleError` when the algorithm cannot run the call or the group does not fit.
    """
    fabric_object = _NAMED_FABRICS.get_or_make(fabric, lambda: make_fabric(fabric)) if isinstance(fabric, str) \
        else fabric
    key = (fabric_object, algorithm, device)
    estimator = _ESTIMATORS.get_or_make(key, lambda: CollectiveEstimator(fabric_object, algorithm, device))
    return estimator.estimate(op, size_bytes, num_ranks=num_ranks, layout=layout, root=root)
