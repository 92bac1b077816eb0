"""Where a job's ranks sit on a fabric: the one door every caller that prices a job uses.

A fabric places a job itself (`Fabric.place`), except RAMP under ``placement=contention_aware``:
its box is the one RAMP-x runs fastest in, found by pricing RAMP-x schedules
(`ddlsim.network.collectives.rampx.box_choice`). A fabric never imports a collective algorithm,
so this module chooses the box and hands it to the fabric (`RampFabric.place_in_box`).
"""

from __future__ import annotations

from ddlsim.network.collectives.rampx.box_choice import cheapest_box
from ddlsim.network.fabrics.base import Fabric
from ddlsim.network.fabrics.ramp.fabric import RampFabric
from ddlsim.network.placement import Placement


def place_ranks(fabric: Fabric, num_ranks: int) -> Placement:
    """The fabric node of each of a job's `num_ranks` ranks."""
    if isinstance(fabric, RampFabric) and fabric.needs_box(num_ranks):
        return fabric.place_in_box(num_ranks, cheapest_box(fabric, num_ranks))
    return fabric.place(num_ranks)
