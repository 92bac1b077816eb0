"""Network energy and cost columns from a fabric's energy/cost model (RAMP 4.3, TopoOpt App. G).

Every fabric answers ``network_cost(num_ranks) -> NetworkCost | None`` (``capex_usd``,
``power_w``, ``scope`` and component counts; None without a published model). Energy per
iteration is network power times iteration time: the network draws its power whether a link is
busy or idle, as the papers assume. A fabric without a model gives NaN columns, never a made-up
number, and ``network_cost_scope`` = ``NO_MODEL_SCOPE`` says why.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ddlsim.network.fabrics.base import Fabric

NAN = float("nan")
NO_MODEL_SCOPE = "no model"  # network_cost_scope of a fabric without a published energy/cost model


@dataclass(frozen=True)
class NetworkEnergy:
    power_w: float
    cost_usd: float
    scope: str
    energy_per_iteration_j: float
    energy_to_accuracy_j: float

    def row(self) -> dict[str, Any]:
        return {
            "network_power_w": self.power_w,
            "network_energy_j": self.energy_per_iteration_j,
            "network_energy_to_accuracy_j": self.energy_to_accuracy_j,
            "network_cost_usd": self.cost_usd,
            "network_cost_scope": self.scope,
        }


def network_energy(fabric: Fabric | None, num_ranks: int, iteration_time_s: float, num_steps: int) -> NetworkEnergy:
    """Energy and cost of the fabric for one job of `num_ranks` ranks; NaN without a model
    (or without a fabric: a timeline priced by a custom network timer)."""
    cost = None if fabric is None else fabric.network_cost(num_ranks)
    if cost is None:
        return NetworkEnergy(NAN, NAN, NO_MODEL_SCOPE, NAN, NAN)
    power_w = float(cost.power_w)
    energy_j = power_w * iteration_time_s
    return NetworkEnergy(
        power_w=power_w,
        cost_usd=float(cost.capex_usd),
        scope=cost.scope,
        energy_per_iteration_j=energy_j,
        energy_to_accuracy_j=energy_j * num_steps if num_steps > 0 else NAN,
    )
