"""What a timeline needs to let concurrent collectives share a fabric: each call's demand on the
fabric's declared resources, and their capacities (see `resources.py`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ddlsim.core.caches import Memo
from ddlsim.core.types import CollectiveCall
from ddlsim.network.contention.resources import Demand, SharedResources, shared_resources
from ddlsim.network.fabrics.base import Fabric
from ddlsim.network.placement import Placement

DemandOf = Callable[[CollectiveCall], Demand]


@dataclass(frozen=True)
class ContentionModel:
    """Each call's demand (`demand_of`) and the capacity of every resource it may name."""

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
    """One job on the fabric's own placement: resources collapsed to their kinds
    (`SharedResources.collapse`); an explicit placement (several jobs): every resource."""
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
