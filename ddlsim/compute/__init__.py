"""compute/: how long the math of each compute task takes on a device (docs/compute.md).

`ComputeModel.estimate(task)` prices a `ComputeTask` from measured profiles (exact or scaled)
or the roofline; `profiler.profile_shard` measures an equivalent shard with torch.profiler.
"""

from __future__ import annotations

from ddlsim.core.lazy import lazy_exports

__getattr__, __dir__ = lazy_exports(__name__, {
    "ComputeConfig": "ddlsim.compute.model",
    "ComputeModel": "ddlsim.compute.model",
})
__all__ = ["ComputeConfig", "ComputeModel"]
