"""compute/: how long the math of each compute task takes on a device (docs/compute.md).

`ComputeModel.estimate(task)` prices a `ComputeTask` from measured profiles (exact or scaled)
or the roofline; `profiler.profile_shard` measures an equivalent shard with torch.profiler.
"""

from ddlsim.compute import devices  # noqa: F401  (registers the device group)
from ddlsim.compute.model import ComputeConfig, ComputeModel

__all__ = ["ComputeConfig", "ComputeModel"]
