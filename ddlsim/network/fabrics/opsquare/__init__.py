"""OPSquare for ML: a flat, two-hop optical packet-switched fabric (Rombouts and Calabretta 2022)."""

from ddlsim.network.fabrics.opsquare.topology import INTER_POD, Hop, OpsquareTopology

__all__ = ["INTER_POD", "Hop", "OpsquareTopology"]
