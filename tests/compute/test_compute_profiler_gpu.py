"""On a CUDA device: mixed precision, kernels from the device trace. Skipped without CUDA."""

import pytest
import torch
from compute_toy import toy_shard

from ddlsim.compute.identity import local_identity
from ddlsim.compute.profiler import ProfileSettings, profile_shard
from ddlsim.core.types import Phase

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")]


def test_gpu_profile_has_device_kernels_and_recompute():
    identity = local_identity("cuda")
    shard = toy_shard(batch=8, width=256, hidden=1024, tokens=128, checkpointing=True, device="cuda")
    measurement = profile_shard(shard, identity, ProfileSettings(iterations=5, warmup=2))
    assert measurement.run_precision == "fp16" and identity.name == torch.cuda.get_device_name()
    assert [p.phase for p in measurement.phases] == [Phase.FORWARD, Phase.RECOMPUTE, Phase.BACKWARD,
                                                      Phase.OPTIMIZER]
    for phase in measurement.phases:
        assert phase.kernels > 0 and 0 < phase.time_s <= phase.wall_time_s * 1.5
