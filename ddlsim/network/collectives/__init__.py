"""Collective algorithms: schedules of steps, never times. Importing registers them."""

from ddlsim.network.collectives import (  # noqa: F401
    best,
    binomial_tree,
    bruck,
    direct,
    halving_doubling,
    per_op,
    pipelined_tree,
    recursive_doubling,
    ring,
    trees,
    wrht,
    wrht_hring,
)
from ddlsim.network.collectives import sipco as _sipco  # noqa: F401
from ddlsim.network.collectives import topoopt_ring as _topoopt_ring  # noqa: F401
from ddlsim.network.collectives.base import CollectiveAlgorithm, ScheduleRequest
from ddlsim.network.collectives.rampx import algorithm as _rampx  # noqa: F401

__all__ = ["CollectiveAlgorithm", "ScheduleRequest"]
