"""Energy and cost of networks (RAMP Section 4.3, Tables 3 and 4): RAMP and EPS fat-trees.

A fabric reports the cost of a job's network itself, `Fabric.network_cost(num_ranks)` (None
without a published model): RAMP with `RampCostModel`, the fat-trees with an `EpsFatTreeModel`
(the HPC SuperPod model, as many parallel networks as a NIC's bandwidth needs), TopoOpt's
fabrics with their component tables. This package holds the models.
"""

from __future__ import annotations

from ddlsim.core.lazy import lazy_exports

__getattr__, __dir__ = lazy_exports(__name__, {
    "DCN_FAT_TREE": "ddlsim.network.costs.eps",
    "EPS_MODELS": "ddlsim.network.costs.eps",
    "HPC_SUPERPOD": "ddlsim.network.costs.eps",
    "EpsFatTreeModel": "ddlsim.network.costs.eps",
    "RampCostModel": "ddlsim.network.costs.ramp",
})
__all__ = ["DCN_FAT_TREE", "EPS_MODELS", "EpsFatTreeModel", "HPC_SUPERPOD", "RampCostModel"]
