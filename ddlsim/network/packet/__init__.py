"""Discrete-event packet models on SimPy: OPSquare's optical packet switches and the H100
leaf-spine reference, under the synthetic load of Rombouts and Calabretta (2022).

    from ddlsim.network.packet import LoadSweep, run_sweep
    rows = run_sweep(LoadSweep(scales=(256,), loads=(0.2, 0.6)))
"""

from __future__ import annotations

from ddlsim.core.lazy import lazy_exports

__getattr__, __dir__ = lazy_exports(__name__, {
    "LoadSweep": "ddlsim.network.packet.experiment",
    "SweepPoint": "ddlsim.network.packet.experiment",
    "run_point": "ddlsim.network.packet.experiment",
    "run_sweep": "ddlsim.network.packet.experiment",
    "LeafSpinePacketModel": "ddlsim.network.packet.leafspine_model",
    "LeafSpinePacketParams": "ddlsim.network.packet.leafspine_model",
    "OpsquarePacketModel": "ddlsim.network.packet.opsquare_model",
    "PacketRunConfig": "ddlsim.network.packet.run_config",
    "PacketRunResult": "ddlsim.network.packet.stats",
})
__all__ = [
    "LeafSpinePacketModel", "LeafSpinePacketParams", "LoadSweep", "OpsquarePacketModel", "PacketRunConfig",
    "PacketRunResult", "SweepPoint", "run_point", "run_sweep",
]
