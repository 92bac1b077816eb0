"""compute/: how long the math of each compute task takes on a device."""

from ddlsim.compute import devices  # noqa: F401
