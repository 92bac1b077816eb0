"""The systems TopoOpt Sec. 5 compares, built for one setting of degree d and link bandwidth B.

TopoOpt's evaluation (Sec. 5.1) prices every model on seven systems of n servers with d
interfaces of B each. Five have fixed links and are priced step by step by the estimator:

* ``topoopt``: the direct-connect topology TopologyFinder (Algorithm 1) made for the job's traffic;
* ``topoopt_ideal``: one non-blocking switch, d x B per server;
* ``topoopt_fat_tree``: a full-bisection fat-tree of the same cost as TopoOpt (App. G's prices);
* ``topoopt_fat_tree_oversub``: a 2:1 oversubscribed fat-tree with d x B per server;
* ``expander``: a random expander of degree d.

Three reconfigure their circuits while an iteration runs (`RECONFIGURING`), so the training room
runs their iterations (`ddlsim.training.reconfiguration`) with the policy given here:
``ocs_reconfig`` (3D-MEMS OCSs, Algorithm 5 every 50 ms, host forwarding), ``ocs_reconfig_nofw``
(the same without forwarding, Fig. 17) and ``sipml`` (Algorithm 5 without discount on every
demand change, 25 us, no forwarding, d wavelengths of B per GPU, App. F).

`architecture_costs` gives Fig. 10's interconnect cost of each architecture (`cost.py`).
"""

from __future__ import annotations

from dataclasses import dataclass

from ddlsim.core import units
from ddlsim.core.errors import ConfigError
from ddlsim.network.fabrics.base import Fabric
from ddlsim.network.fabrics.topoopt import cost
from ddlsim.network.fabrics.topoopt.circuits import ReconfigPolicy
from ddlsim.network.fabrics.topoopt.fabric import TopoOptFabric
from ddlsim.network.fabrics.topoopt.topology_finder import TopologyPlan

TOPOOPT = "topoopt"  # the system built on TopologyFinder's topology for the job's traffic
STATIC = (TOPOOPT, "topoopt_ideal", "topoopt_fat_tree", "topoopt_fat_tree_oversub", "expander")
RECONFIGURING = ("ocs_reconfig", "ocs_reconfig_nofw", "sipml")
SYSTEMS = STATIC + RECONFIGURING
FIG11_SYSTEMS = STATIC + ("ocs_reconfig", "sipml")  # the seven interconnects of Fig. 11
UNBOUNDED_BPS = 1e21  # links that never limit: what is left is the time spent off the circuits


@dataclass(frozen=True)
class Setting:
    """n servers of `gpus_per_server` GPUs, each with `degree` interfaces of `link_bandwidth_bps`."""

    num_servers: int
    gpus_per_server: int
    degree: int
    link_bandwidth_bps: float

    def __post_init__(self) -> None:
        for key in ("num_servers", "gpus_per_server", "degree"):
            if getattr(self, key) < 1:
                raise ConfigError(key, getattr(self, key), "must be >= 1")
        if not self.link_bandwidth_bps > 0:
            raise ConfigError("link_bandwidth_bps", self.link_bandwidth_bps, "must be > 0")


def check_system(system: str) -> str:
    if system not in SYSTEMS:
        raise ConfigError("systems", system, f"unknown TopoOpt Sec. 5.1 system; choose from {', '.join(SYSTEMS)}")
    return system


def static_fabric(system: str, setting: Setting, plan: TopologyPlan | None = None) -> Fabric:
    """The fixed-link fabric `system` for `setting` (``topoopt`` needs TopologyFinder's `plan`)."""
    from ddlsim.network.api import make_fabric

    b = setting.link_bandwidth_bps
    per_gpu = f"{setting.degree * b / units.GIGA / setting.gpus_per_server:g}Gbps"
    if system == TOPOOPT:
        if plan is None:
            raise ConfigError("systems", system, "needs the TopologyFinder plan of the job's traffic")
        return TopoOptFabric.for_plan(plan, b, gpus_per_server=setting.gpus_per_server)
    if system == "topoopt_fat_tree":
        equivalent = cost.cost_equivalent_fat_tree_bandwidth_bps(setting.num_servers, setting.degree, b)
        return make_fabric(system, nic_bandwidth=f"{equivalent / units.GIGA / setting.gpus_per_server:.6g}Gbps")
    if system in ("topoopt_ideal", "topoopt_fat_tree_oversub"):
        return make_fabric(system, nic_bandwidth=per_gpu)
    if system == "expander":
        return make_fabric(system, degree=setting.degree, link_bandwidth=f"{b / units.GIGA:g}Gbps")
    raise ConfigError("systems", check_system(system), "reconfigures while it runs: use reconfig_policy")


def reconfig_policy(system: str, setting: Setting, *, reconfiguration_s: float | None = None,
                    period_s: float = 0.05) -> tuple[ReconfigPolicy, int]:
    """(policy, GPUs per circuit node) of a reconfiguring system; `reconfiguration_s` None takes
    Sec. 5.1's latency (10 ms for the 3D-MEMS OCS, 25 us for SiP-ML's silicon photonics)."""
    b = setting.link_bandwidth_bps
    if system in ("ocs_reconfig", "ocs_reconfig_nofw"):
        latency = 10e-3 if reconfiguration_s is None else reconfiguration_s
        policy = ReconfigPolicy(setting.degree, b, latency, period_s, system == "ocs_reconfig", True)
        return policy, setting.gpus_per_server
    if system == "sipml":
        latency = 25e-6 if reconfiguration_s is None else reconfiguration_s
        return ReconfigPolicy(setting.degree, b, latency, None, False, False), 1
    raise ConfigError("systems", check_system(system), "has fixed links: use static_fabric")


def off_circuit_fabric(setting: Setting, gpus_per_node: int) -> TopoOptFabric:
    """TopoOpt with unbounded links between nodes of `gpus_per_node` GPUs: a collective priced on
    it takes only the time spent off the circuits (inside nodes, local reductions), so that the
    reconfiguring systems add exactly what the estimator charges the static ones for that part."""
    return TopoOptFabric(num_servers=setting.num_servers * setting.gpus_per_server // gpus_per_node,
                         degree=setting.degree, link_bandwidth_bps=UNBOUNDED_BPS, link_latency_s=0.0,
                         gpus_per_server=gpus_per_node)


def architecture_costs(num_servers: int, degree: int, link_bandwidth_bps: float) -> dict[str, cost.CostBreakdown]:
    """Fig. 10: the interconnect of each architecture for `num_servers` servers (App. G, Table 2)."""
    b = link_bandwidth_bps
    equivalent = cost.cost_equivalent_fat_tree_bandwidth_bps(num_servers, degree, b)
    return {
        "topoopt": cost.topoopt_cost(num_servers, degree, b),
        "topoopt_3d_mems": cost.topoopt_cost(num_servers, degree, b, switch="ocs_3d_mems"),
        "ocs_reconfig": cost.ocs_reconfig_cost(num_servers, degree, b),
        "topoopt_ideal": cost.ideal_switch_cost(num_servers, degree, b),
        "topoopt_fat_tree": cost.fat_tree_cost(num_servers, equivalent),
        "topoopt_fat_tree_oversub": cost.fat_tree_cost(num_servers, degree * b, oversubscription=2),
        "expander": cost.expander_cost(num_servers, degree, b),
    }
