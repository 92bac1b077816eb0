"""Fabrics: physical resources and the pricing of one schedule step. Importing registers them."""

from ddlsim.network.fabrics import bcube as _bcube  # noqa: F401
from ddlsim.network.fabrics import fat_tree, ideal, torus  # noqa: F401
from ddlsim.network.fabrics import optical_ring as _optical_ring  # noqa: F401
from ddlsim.network.fabrics import sipac as _sipac  # noqa: F401
from ddlsim.network.fabrics import topoopt as _topoopt  # noqa: F401
from ddlsim.network.fabrics.base import Fabric
from ddlsim.network.fabrics.opsquare import fabric as _opsquare  # noqa: F401
from ddlsim.network.fabrics.ramp import fabric as _ramp  # noqa: F401

__all__ = ["Fabric"]
