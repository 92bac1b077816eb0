"""Models a workload can be built from. Importing registers them."""

from ddlsim.workload.models import dlrm, hf, megatron, topoopt  # noqa: F401
