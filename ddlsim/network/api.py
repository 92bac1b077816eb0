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

from ddlsim.core.caches import PROCESS_CACHES
from ddlsim.core.registry import build
from ddlsim.core.types import CollectiveEstimate, CollectiveOp, GroupLayout
from ddlsim.network.collectives.base import CollectiveAlgorithm
from ddlsim.network.estimator import CollectiveEstimator
from ddlsim.network.fabrics.base import Fabric
from ddlsim.network.reduction import DEFAULT_DEVICE, ReductionModel


def make_fabric(name: str, **params: Any) -> Fabric:
    """Build a fabric by registered name or YAML variant, with YAML-style parameters
    (`ddlsim.core.registry.build`)."""
    return build("fabric", name, **params)


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
