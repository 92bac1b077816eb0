"""network/: fabrics, collective algorithms (schedules of steps) and their pricing.

See docs/network.md. The public entry points are `estimate_collective` and `make_fabric`;
`CollectiveEstimator` keeps caches across many calls on one fabric.
"""

from ddlsim.network.api import clear_caches, estimate_collective, make_fabric
from ddlsim.network.estimator import CollectiveEstimator, make_algorithm
from ddlsim.network.reduction import ReductionModel

__all__ = ["CollectiveEstimator", "ReductionModel", "clear_caches", "estimate_collective", "make_algorithm",
           "make_fabric"]
