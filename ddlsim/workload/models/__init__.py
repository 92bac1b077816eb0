"""Models a workload can be built from. Importing registers them."""

from ddlsim.workload.models import megatron  # noqa: F401
