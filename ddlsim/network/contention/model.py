"""What a timeline needs to let concurrent collectives share a fabric: each call's demand, and the
capacities of what it loads.

On a fabric with per-flow routes (`flow_routes.has_flow_routes`), a call is its compact schedule's
steps on the fabric's own links (`LinkDemand`, `step_loads.py`); elsewhere (RAMP, the optical ring,
fabrics that choose circuits per step) it is one coflow on the declared resources (`resources.py`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ddlsim.core.caches import Memo
from ddlsim.core.types import CollectiveCall
from ddlsim.network.contention.flow_routes import has_flow_routes
from ddlsim.network.contention.link_demand import LinkDemand
from ddlsim.network.contention.resources import Demand, SharedResources, shared_resources
from ddlsim.network.fabrics.base import Fabric
from ddlsim.network.placement import Placement

DemandOf = Callable[[CollectiveCall], Demand]


@dataclass(frozen=True)
class ContentionModel:
    """Each call's demand (`demand_of`) and the capacity of every resource it may name. A
    `LinkDemand` gives each call's steps on the fabric's links, and all pipeline stages share them."""

    demand_of: DemandOf
    capacity_bps: np.ndarray
    resources: SharedResources | None = None


_MODELS = Memo("network.contention.models", maxsize=16)


def contention_model(fabric: Fabric, placement: Placement | None = None) -> ContentionModel:
    """The model for one job on `fabric`, its ranks placed by `placement` (the fabric's own
    placement of each call's job when None); demands are memoised per call, models per fabric."""
    if placement is not None:
        return _build(fabric, placement)
    entry = _MODELS.get(id(fabric))
    if entry is None or entry[0] is not fabric:
        entry = _MODELS.put(id(fabric), (fabric, _build(fabric, None)))
    return entry[1]


def _build(fabric: Fabric, placement: Placement | None) -> ContentionModel:
    """Per-step link loads where the fabric routes flows; otherwise, for one job on the fabric's own
    placement, resources collapsed to their kinds (`SharedResources.collapse`); for an explicit
    placement (several jobs), every resource."""
    if has_flow_routes(fabric):
        return ContentionModel(LinkDemand(fabric, placement), fabric.capacity_bps())
    resources = shared_resources(fabric)
    cache = Memo(f"network.contention.demand.{fabric.name}", maxsize=4096)
    collapse = placement is None

    def demand_of(call: CollectiveCall) -> Demand:
        key = (call.op, call.size_bytes, call.group, call.root)
        demand = cache.get(key)
        if demand is None:
            demand = resources.demand(call.op, call.size_bytes, call.group, call.root, placement)
            demand = cache.put(key, resources.collapse(demand) if collapse else demand)
        return demand

    capacity = resources.kind_capacity_bps() if collapse else resources.capacity_bps
    return ContentionModel(demand_of, capacity, resources)
