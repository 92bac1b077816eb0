"""Cost and power of a RAMP network (RAMP Section 4.3, Tables 3 and 4).

RAMP's core is passive: b x^3 star-coupler subnets ($3,000 each). Everything active sits in
the b x^2 J Lambda transceivers (integrated laser, modulator and SOAs, $600 to $1,200: 1.5 to
3 times an EPS transceiver). A transceiver draws 3.4 W with a fixed-wavelength receiver
(broadcast-and-select) and 3.8 W with a tunable one (the AWGR subnets), i.e. 8.5 and
9.5 pJ/bit at 400 Gbps: the energy per bit of a path, since a path crosses one transceiver
pair and passive parts only. The network draws that power on every transceiver.
"""

from __future__ import annotations

from dataclasses import dataclass

from ddlsim.core.errors import ConfigError
from ddlsim.core.types import NetworkCost
from ddlsim.network.fabrics.ramp.topology import RampDims

FIXED_RECEIVER_POWER_W = 3.4
TUNABLE_RECEIVER_POWER_W = 3.8


@dataclass(frozen=True)
class RampCostModel:
    transceiver_cost_usd: float = 600.0
    coupler_cost_usd: float = 3000.0
    transceiver_power_w: float = FIXED_RECEIVER_POWER_W

    def __post_init__(self) -> None:
        for key in ("transceiver_cost_usd", "coupler_cost_usd", "transceiver_power_w"):
            value = getattr(self, key)
            if not value >= 0:
                raise ConfigError(key, value, "must be >= 0")

    def counts(self, dims: RampDims) -> dict[str, float]:
        return {"transceivers": dims.num_transceivers, "couplers": dims.num_subnets}

    def capex_usd(self, dims: RampDims) -> float:
        return dims.num_transceivers * self.transceiver_cost_usd + dims.num_subnets * self.coupler_cost_usd

    def transceiver_share_of_capex(self, dims: RampDims) -> float:
        return dims.num_transceivers * self.transceiver_cost_usd / self.capex_usd(dims)

    def energy_per_bit_j(self, dims: RampDims) -> float:
        return self.transceiver_power_w / dims.line_rate_bps

    def power_w(self, dims: RampDims) -> float:
        return dims.num_transceivers * self.transceiver_power_w

    def network_cost(self, dims: RampDims, num_ranks: int) -> NetworkCost:
        """The job's transceivers, and its share (num_ranks / nodes) of the passive subnets."""
        if not 1 <= num_ranks <= dims.num_nodes:
            raise ConfigError("num_ranks", num_ranks, f"must be in [1, {dims.num_nodes}]")
        transceivers = num_ranks * dims.transceivers_per_node
        couplers = dims.num_subnets * num_ranks / dims.num_nodes
        return NetworkCost(capex_usd=transceivers * self.transceiver_cost_usd + couplers * self.coupler_cost_usd,
                           power_w=transceivers * self.transceiver_power_w, scope="job",
                           components={"transceivers": transceivers, "couplers": couplers})
