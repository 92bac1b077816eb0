"""Energy and cost of networks (RAMP Section 4.3, Tables 3 and 4): RAMP and EPS fat-trees.

A fabric reports the cost of a job's network itself, `Fabric.network_cost(num_ranks)` (None
without a published model): RAMP with `RampCostModel`, the fat-trees with an `EpsFatTreeModel`
(the HPC SuperPod model, as many parallel networks as a NIC's bandwidth needs), TopoOpt's
fabrics with their component tables. This package holds the models.
"""

from __future__ import annotations

from ddlsim.network.costs.eps import DCN_FAT_TREE, EPS_MODELS, HPC_SUPERPOD, EpsFatTreeModel
from ddlsim.network.costs.ramp import RampCostModel

__all__ = ["DCN_FAT_TREE", "EPS_MODELS", "HPC_SUPERPOD", "EpsFatTreeModel", "RampCostModel"]
