"""Fabrics: physical resources and the pricing of one schedule step. `ddlsim.core.catalog` lists
the module that registers each."""

from __future__ import annotations

from ddlsim.core.lazy import lazy_exports

__getattr__, __dir__ = lazy_exports(__name__, {
    "Fabric": "ddlsim.network.fabrics.base",
})
__all__ = ["Fabric"]
