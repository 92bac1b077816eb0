"""TeraRack-style WDM optical ring (WRHT Section 3.2, Table 2): RWA per step, optical budget."""

from __future__ import annotations

from ddlsim.core.lazy import lazy_exports

__getattr__, __dir__ = lazy_exports(__name__, {
    "OpticalRing": "ddlsim.network.fabrics.optical_ring.fabric",
    "OpticalRingConfig": "ddlsim.network.fabrics.optical_ring.params",
})
__all__ = ["OpticalRing", "OpticalRingConfig"]
