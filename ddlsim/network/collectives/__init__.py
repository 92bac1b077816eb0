"""Collective algorithms: schedules of steps, never times. Importing registers them."""

from ddlsim.network.collectives import best, ring  # noqa: F401
from ddlsim.network.collectives.base import CollectiveAlgorithm, ScheduleRequest

__all__ = ["CollectiveAlgorithm", "ScheduleRequest"]
