"""Measured compute: captured ops keep their arguments and replay on a device."""

from __future__ import annotations

import pytest
import torch

import ddlsim
from ddlsim.capture.replay import decode_arguments, encode_arguments, resolve_op
from ddlsim.core.errors import InfeasibleError
from tests.capture.programs import fsdp_tp_mlp


@pytest.fixture(scope="module")
def program():
    return ddlsim.capture(fsdp_tp_mlp, (2, 2), ("dp", "tp"))


def test_matrix_multiplies_replay_to_their_recorded_shapes(program):
    compute = program.events[program.events.kind == "compute"]
    row = compute[compute.op == "aten.addmm"].iloc[0]
    args, kwargs = decode_arguments(row.args, "cpu")
    out = resolve_op(row.torch_op)(*args, **kwargs)
    assert tuple(out.shape) == (row.gemm_m, row.gemm_n)
    assert encode_arguments(tuple(args), kwargs) == row.args


def test_measured_compute_needs_a_gpu(program):
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU: the GPU test below measures")
    with pytest.raises(InfeasibleError, match="GPU"):
        ddlsim.simulate(program, compute="measured")


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_measured_compute_on_the_gpu(program):
    result = ddlsim.simulate(program, compute="measured", device="h100_sxm")
    assert "measured" in result.row()["compute_source"]
    assert result.compute_time_s > 0
