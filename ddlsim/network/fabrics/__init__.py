"""Fabrics: physical resources and the pricing of one schedule step. Importing registers them."""

from ddlsim.network.fabrics import fat_tree, ideal, torus  # noqa: F401
from ddlsim.network.fabrics import topoopt as _topoopt  # noqa: F401
from ddlsim.network.fabrics.base import Fabric

__all__ = ["Fabric"]
