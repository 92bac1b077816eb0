"""Models a workload can be built from. Importing registers them."""

from ddlsim.workload.models import dlrm, gpt, hf, megatron, topoopt  # noqa: F401
