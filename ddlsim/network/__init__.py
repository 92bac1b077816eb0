"""network/: fabrics, collective algorithms (schedules of steps) and their pricing.

See docs/network.md. The public entry points are `estimate_collective` and `make_fabric`;
`CollectiveEstimator` keeps caches across many calls on one fabric.
"""

from __future__ import annotations

from ddlsim.core.lazy import lazy_exports

__getattr__, __dir__ = lazy_exports(__name__, {
    "clear_caches": "ddlsim.network.api",
    "estimate_collective": "ddlsim.network.api",
    "make_fabric": "ddlsim.network.api",
    "CollectiveEstimator": "ddlsim.network.estimator",
    "make_algorithm": "ddlsim.network.estimator",
    "ReductionModel": "ddlsim.network.reduction",
})
__all__ = [
    "CollectiveEstimator", "ReductionModel", "clear_caches", "estimate_collective", "make_algorithm",
    "make_fabric",
]
