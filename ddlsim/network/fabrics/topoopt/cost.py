"""Network cost of TopoOpt and its baselines (TopoOpt section 5.2, Fig. 10, appendix G, Table 2).

Component prices are Table 2's, by link bandwidth. The counts follow appendix G:

* TopoOpt: n x d NICs and transceivers, one fibre per interface, and for the look-ahead design
  (appendix C) 2 x n x d patch-panel ports and n x d 1x2 mechanical switches; with 3D-MEMS OCSs
  instead, n x d OCS ports and no look-ahead (an OCS reconfigures in 10 ms).
* OCS-reconfig: d OCSs connected to all servers, so n x d OCS ports.
* Fat-tree (and the Ideal Switch, priced as a full-bisection fat-tree of d x B links): one NIC per
  server, one transceiver per NIC and per switch port, and the switch ports of a three-tier
  fat-tree: 5 per server at full bisection (a k = 8 fat-tree: 640 ports for 128 servers, the
  paper's example), 1 + 4 / s per server when the ToR uplinks are oversubscribed s:1.
* Expander: n x d NICs and transceivers and one cable per server pair, n x d / 2.

Rules the paper leaves implicit, made explicit: a bandwidth between two rows of Table 2 uses the
next row up; above 200 Gbps a link is ceil(B / 200 Gbps) 200 Gbps links (Table 2 builds 200 Gbps
from 100 Gbps parts the same way); a fibre costs 30 cents per metre at the mean of the paper's
uniform 0-1000 m length, 500 m, and a 200 Gbps link uses two fibres. SiP-ML is not priced: the
paper gives no prices for its silicon-photonic parts.

Power is not in the TopoOpt paper. `power_w` uses RAMP Table 4's figures, configurable: 3.5 W per
100 Gbps of optical transceiver (Arista QSFP100) and 5 W per electrical switch port (a 320 W
64-port Arista 7170-64c); patch panels, 1x2 switches and OCS mirrors are counted as passive and
NICs are not counted, as in RAMP Table 4.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ddlsim.core import units
from ddlsim.core.errors import ConfigError, InfeasibleError
from ddlsim.core.types import NetworkCost

# Table 2: link bandwidth (Gbps) -> (transceiver, NIC, electrical switch port) in USD.
_TABLE2_USD: dict[int, tuple[float, float, float]] = {
    10: (20.0, 185.0, 94.0),
    25: (39.0, 185.0, 144.0),
    40: (39.0, 354.0, 144.0),
    100: (99.0, 678.0, 187.0),
    200: (198.0, 815.0, 374.0),
}
PATCH_PANEL_PORT_USD = 100.0
OCS_PORT_USD = 520.0
SWITCH_1X2_USD = 25.0
FIBER_USD_PER_M = 0.30
FIBER_MEAN_LENGTH_M = 500.0
FAT_TREE_TIERS = 3


@dataclass(frozen=True)
class PowerModel:
    transceiver_w_per_100g: float = 3.5
    switch_port_w: float = 5.0


@dataclass(frozen=True)
class LinkParts:
    """What one link of a given bandwidth is built from: how many 200G-or-less lanes and fibres."""

    bandwidth_bps: float
    lanes: int
    row_gbps: int
    fibers: int

    @property
    def transceiver_usd(self) -> float:
        return self.lanes * _TABLE2_USD[self.row_gbps][0]

    @property
    def nic_usd(self) -> float:
        return self.lanes * _TABLE2_USD[self.row_gbps][1]

    @property
    def switch_port_usd(self) -> float:
        return self.lanes * _TABLE2_USD[self.row_gbps][2]

    @property
    def fiber_usd(self) -> float:
        return self.fibers * FIBER_USD_PER_M * FIBER_MEAN_LENGTH_M

    @property
    def transceiver_100g_units(self) -> float:
        return max(1.0, self.bandwidth_bps / (100 * units.GIGA))


def link_parts(bandwidth_bps: float) -> LinkParts:
    if not (math.isfinite(bandwidth_bps) and bandwidth_bps > 0):
        raise ConfigError("bandwidth", bandwidth_bps, "must be a positive finite number of bits per second")
    gbps = bandwidth_bps / units.GIGA
    rows = sorted(_TABLE2_USD)
    if gbps <= rows[-1] * (1 + 1e-12):
        row = next(r for r in rows if gbps <= r * (1 + 1e-12))
        return LinkParts(bandwidth_bps, 1, row, 2 if row == 200 else 1)
    lanes = math.ceil(gbps / rows[-1] - 1e-12)
    return LinkParts(bandwidth_bps, lanes, rows[-1], 2 * lanes)


@dataclass(frozen=True)
class CostBreakdown:
    """Component counts and their prices for one architecture of `num_servers` servers."""

    architecture: str
    num_servers: int
    counts: dict[str, float]
    unit_usd: dict[str, float]
    transceiver_w: float = 0.0
    switch_port_w: float = 0.0
    notes: str = ""
    _extra: dict = field(default_factory=dict, repr=False)

    @property
    def capex_usd(self) -> float:
        return float(sum(self.counts[k] * self.unit_usd[k] for k in self.counts))

    @property
    def power_w(self) -> float:
        return float(self.counts.get("transceivers", 0.0) * self.transceiver_w
                     + self.counts.get("switch_ports", 0.0) * self.switch_port_w)

    def per_server_usd(self) -> float:
        return self.capex_usd / self.num_servers

    def network_cost(self, scope: str = "job") -> NetworkCost:
        return NetworkCost(capex_usd=self.capex_usd, power_w=self.power_w, scope=scope, components=self.counts)


def _check(num_servers: int, degree: int = 1) -> None:
    if num_servers < 1:
        raise ConfigError("num_servers", num_servers, "must be >= 1")
    if degree < 1:
        raise ConfigError("degree", degree, "must be >= 1")


def _endpoint_costs(parts: LinkParts, power: PowerModel) -> dict[str, float]:
    return {"nics": parts.nic_usd, "transceivers": parts.transceiver_usd, "fibers": parts.fiber_usd}


def topoopt_cost(num_servers: int, degree: int, link_bandwidth_bps: float, *, switch: str = "patch_panel",
                 power: PowerModel = PowerModel()) -> CostBreakdown:
    """TopoOpt with patch panels (look-ahead design) or 3D-MEMS OCSs."""
    _check(num_servers, degree)
    parts = link_parts(link_bandwidth_bps)
    interfaces = num_servers * degree
    counts = {"nics": interfaces, "transceivers": interfaces, "fibers": interfaces}
    unit = _endpoint_costs(parts, power)
    if switch == "patch_panel":
        counts |= {"patch_panel_ports": 2 * interfaces, "switches_1x2": interfaces}
        unit |= {"patch_panel_ports": PATCH_PANEL_PORT_USD, "switches_1x2": SWITCH_1X2_USD}
    elif switch == "ocs_3d_mems":
        counts |= {"ocs_ports": interfaces}
        unit |= {"ocs_ports": OCS_PORT_USD}
    else:
        raise ConfigError("switch", switch, "TopoOpt is priced with 'patch_panel' or 'ocs_3d_mems' (Table 2)")
    return CostBreakdown(f"topoopt_{switch}", num_servers, counts, unit,
                         transceiver_w=power.transceiver_w_per_100g * parts.transceiver_100g_units)


def ocs_reconfig_cost(num_servers: int, degree: int, link_bandwidth_bps: float, *,
                      power: PowerModel = PowerModel()) -> CostBreakdown:
    """d OCSs, each connected to every server, in a flat topology."""
    breakdown = topoopt_cost(num_servers, degree, link_bandwidth_bps, switch="ocs_3d_mems", power=power)
    return CostBreakdown("ocs_reconfig", num_servers, breakdown.counts, breakdown.unit_usd,
                         transceiver_w=breakdown.transceiver_w)


def fat_tree_cost(num_servers: int, link_bandwidth_bps: float, *, oversubscription: float = 1.0,
                  power: PowerModel = PowerModel()) -> CostBreakdown:
    """A three-tier fat-tree with one NIC per server, ToR uplinks oversubscribed `oversubscription`:1."""
    _check(num_servers)
    if not oversubscription >= 1:
        raise ConfigError("oversubscription", oversubscription, "must be >= 1")
    parts = link_parts(link_bandwidth_bps)
    ports = num_servers * (1 + 2 * (FAT_TREE_TIERS - 1) / oversubscription)
    links = num_servers + (ports - num_servers) / 2
    counts = {"nics": float(num_servers), "transceivers": num_servers + ports, "switch_ports": ports,
              "fibers": links * parts.fibers}
    unit = {"nics": parts.nic_usd, "transceivers": parts.transceiver_usd, "switch_ports": parts.switch_port_usd,
            "fibers": FIBER_USD_PER_M * FIBER_MEAN_LENGTH_M}
    name = "fat_tree" if oversubscription == 1 else f"fat_tree_{oversubscription:g}to1"
    return CostBreakdown(name, num_servers, counts, unit,
                         transceiver_w=power.transceiver_w_per_100g * parts.transceiver_100g_units,
                         switch_port_w=power.switch_port_w * parts.lanes)


def ideal_switch_cost(num_servers: int, degree: int, link_bandwidth_bps: float, *,
                      power: PowerModel = PowerModel()) -> CostBreakdown:
    """The Ideal Switch, approximated by a full-bisection fat-tree with d x B links (section 5.2)."""
    breakdown = fat_tree_cost(num_servers, degree * link_bandwidth_bps, power=power)
    return CostBreakdown("ideal_switch", num_servers, breakdown.counts, breakdown.unit_usd,
                         breakdown.transceiver_w, breakdown.switch_port_w)


def expander_cost(num_servers: int, degree: int, link_bandwidth_bps: float, *,
                  power: PowerModel = PowerModel()) -> CostBreakdown:
    """Servers cabled directly to each other: d NICs each, one cable per link."""
    _check(num_servers, degree)
    parts = link_parts(link_bandwidth_bps)
    interfaces = num_servers * degree
    counts = {"nics": float(interfaces), "transceivers": float(interfaces), "fibers": interfaces / 2 * parts.fibers}
    unit = {"nics": parts.nic_usd, "transceivers": parts.transceiver_usd,
            "fibers": FIBER_USD_PER_M * FIBER_MEAN_LENGTH_M}
    return CostBreakdown("expander", num_servers, counts, unit,
                         transceiver_w=power.transceiver_w_per_100g * parts.transceiver_100g_units)


def cost_equivalent_fat_tree_bandwidth_bps(num_servers: int, degree: int, link_bandwidth_bps: float, *,
                                           switch: str = "patch_panel") -> float:
    """The fat-tree link bandwidth d x B' whose fat-tree costs what TopoOpt(d, B) costs (section 5.1).

    Fat-tree cost is a step function of bandwidth (Table 2 rows); we interpolate linearly between
    the rows (10, 25, 40, 100, 200 Gbps and multiples of 200 Gbps) and invert.
    """
    target = topoopt_cost(num_servers, degree, link_bandwidth_bps, switch=switch).capex_usd
    grid_gbps = [10, 25, 40, 100, 200] + [200 * k for k in range(2, 65)]
    costs = [fat_tree_cost(num_servers, g * units.GIGA).capex_usd for g in grid_gbps]
    if not costs[0] <= target <= costs[-1]:
        raise InfeasibleError(
            f"no fat-tree between {grid_gbps[0]} and {grid_gbps[-1]} Gbps per link costs what TopoOpt costs "
            f"(${target:,.0f} for {num_servers} servers of degree {degree} at "
            f"{link_bandwidth_bps / units.GIGA:g} Gbps)")
    return float(np.interp(target, costs, grid_gbps)) * units.GIGA
