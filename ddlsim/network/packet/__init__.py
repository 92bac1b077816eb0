"""Discrete-event packet models on SimPy: OPSquare's optical packet switches and the H100
leaf-spine reference, under the synthetic load of Rombouts and Calabretta (2022).

    from ddlsim.network.packet import LoadSweep, run_sweep
    rows = run_sweep(LoadSweep(scales=(256,), loads=(0.2, 0.6)))
"""

from ddlsim.network.packet.experiment import LoadSweep, SweepPoint, run_point, run_sweep
from ddlsim.network.packet.leafspine_model import LeafSpinePacketModel, LeafSpinePacketParams
from ddlsim.network.packet.opsquare_model import OpsquarePacketModel
from ddlsim.network.packet.run_config import PacketRunConfig
from ddlsim.network.packet.stats import PacketRunResult

__all__ = ["LeafSpinePacketModel", "LeafSpinePacketParams", "LoadSweep", "OpsquarePacketModel", "PacketRunConfig",
           "PacketRunResult", "SweepPoint", "run_point", "run_sweep"]
