"""Collective algorithms: schedules of steps, never times. `ddlsim.core.catalog` lists the module
that registers each."""

from __future__ import annotations

from ddlsim.core.lazy import lazy_exports

__getattr__, __dir__ = lazy_exports(__name__, {
    "CollectiveAlgorithm": "ddlsim.network.collectives.base",
    "ScheduleRequest": "ddlsim.network.collectives.base",
})
__all__ = ["CollectiveAlgorithm", "ScheduleRequest"]
