"""TeraRack-style WDM optical ring (WRHT Section 3.2, Table 2): RWA per step, optical budget."""

from ddlsim.network.fabrics.optical_ring.fabric import OpticalRing
from ddlsim.network.fabrics.optical_ring.params import OpticalRingConfig

__all__ = ["OpticalRing", "OpticalRingConfig"]
