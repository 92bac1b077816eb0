"""Energy and cost of networks (RAMP Section 4.3, Tables 3 and 4): RAMP and EPS fat-trees.

`network_cost_of(fabric, num_ranks)` returns the `NetworkCost` of a job: the fabric's own
`network_cost` when it has one (RAMP), else the EPS model matching an electrical fat-tree
(the HPC SuperPod model with as many parallel networks as its NIC bandwidth needs), else None.
"""

from __future__ import annotations

import math
from typing import Any

from ddlsim.network.costs.eps import DCN_FAT_TREE, EPS_MODELS, HPC_SUPERPOD, RAMP_NODE_CAPACITY_BPS, EpsFatTreeModel
from ddlsim.network.costs.ramp import RampCostModel
from ddlsim.types import NetworkCost


def network_cost_of(fabric: Any, num_ranks: int) -> NetworkCost | None:
    """The job's network cost on `fabric`, or None when no model covers the fabric."""
    own = getattr(fabric, "network_cost", None)
    if callable(own):
        return own(num_ranks)
    nic = getattr(fabric, "nic_bandwidth_bps", None)
    if nic is not None and getattr(fabric, "tier_sizes", None):
        networks = max(1, math.ceil(nic / HPC_SUPERPOD.port_rate_bps - 1e-9))
        sigma = RAMP_NODE_CAPACITY_BPS / (networks * HPC_SUPERPOD.port_rate_bps)
        return HPC_SUPERPOD.network_cost(num_ranks, max(sigma, 1.0), fabric_nodes=int(fabric.num_nodes))
    return None


__all__ = ["DCN_FAT_TREE", "EPS_MODELS", "HPC_SUPERPOD", "EpsFatTreeModel", "RampCostModel", "network_cost_of"]
