"""Fabrics: physical resources and the pricing of one schedule step. Importing registers them."""

from ddlsim.network.fabrics import ideal  # noqa: F401
