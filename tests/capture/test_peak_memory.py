"""Per-rank peak memory of a capture from live tensor sizes, and plans that do not fit."""

from __future__ import annotations

from functools import partial

import pytest
import torch

import ddlsim
from ddlsim.core.errors import InfeasibleError
from examples.hf_fsdp import build as hf_fsdp

N = 256 * 1024  # floats: one MiB per tensor
MIB = 1024 * 1024


def _three_live_tensors(mesh):
    weight = torch.nn.Parameter(torch.zeros(N))

    def step():
        with torch.no_grad():
            a = torch.ones(N)
            b = a * weight
            c = b + a  # weight, a, b and c live: 4 MiB
            del a, b
            c * 2  # weight, c and the product: 3 MiB

    return step


@pytest.fixture(scope="module")
def program():
    return ddlsim.capture(_three_live_tensors, (4,), ("dp",))


def test_the_peak_is_the_largest_sum_of_live_tensors(program):
    assert program.peak_memory_bytes == {0: 4 * MIB}
    assert list(program.compute.op) == ["aten.ones", "aten.mul", "aten.add", "aten.mul"]


def test_a_plan_over_the_device_memory_is_infeasible(program):
    small = {"name": "h100_sxm", "memory": "3MiB"}
    with pytest.raises(InfeasibleError, match=r"captured rank 0 needs 0\.00 GB.*has 0\.00 GB") as error:
        ddlsim.simulate(program, device=small)
    assert "check_memory=False" in str(error.value)
    result = ddlsim.simulate(program, device=small, check_memory=False)
    assert result.row()["memory_per_gpu_bytes"] == 4 * MIB
    assert ddlsim.simulate(program, device={"name": "h100_sxm", "memory": "4MiB"}).iteration_time_s > 0


def test_fsdp_buffers_freed_by_resizing_do_not_count():
    """FSDP2 frees a layer's gathered parameters by resizing their storage to 0 after forward
    (reshard_after_forward) and gathers them again in backward: its peak is lower than keeping
    them gathered, by about the gathered layers' bytes."""
    peaks = {}
    for reshard in (True, False):
        program = ddlsim.capture(partial(hf_fsdp, family="llama", reshard_after_forward=reshard,
                                         num_hidden_layers=4), (4,), ("dp",))
        peaks[reshard] = program.peak_memory_bytes[0]
    layer_params = 4 * 128 * 128 + 2 * 128 * 64 + 3 * 128 * 256 + 2 * 128  # Q, O, K, V, MLP, norms
    assert peaks[False] - peaks[True] >= 2 * layer_params * 2  # at least two layers' bf16 weights
