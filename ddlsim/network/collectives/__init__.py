"""Collective algorithms: schedules of steps, never times. Importing registers them."""

from ddlsim.network.collectives import ring  # noqa: F401
