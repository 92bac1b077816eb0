"""Bytes asserted from captures: DDP all-reduces the parameter bytes; FSDP2 reduce-scatters the
gradient bytes and all-gathers the parameter bytes once per gather its resharding implies."""

from __future__ import annotations

from functools import partial

import pytest
import torch

import ddlsim
from examples.ddp_cnn import SmallCNN
from examples.ddp_cnn import build as ddp_cnn
from examples.hf_fsdp import build as hf_fsdp
from examples.hf_fsdp import decoder, decoder_layers

DP = 4


def _bytes(params) -> int:
    return sum(p.numel() * p.element_size() for p in params)


def test_ddp_all_reduces_the_parameter_bytes_in_buckets():
    width, classes = 16, 100
    program = ddlsim.capture(partial(ddp_cnn, width=width, classes=classes, batch=4, image=32, bucket_mb=0.05),
                             (DP,), ("dp",))
    with torch.device("meta"):
        parameter_bytes = _bytes(SmallCNN(width, classes).parameters())
    reduces = program.collectives[(program.collectives.op == "all_reduce")]
    assert reduces["count"].sum() > 1  # several buckets, issued during backward
    assert set(reduces.phase) == {"backward"}
    assert program.total_bytes("all_reduce") == parameter_bytes


@pytest.mark.parametrize("reshard", [True, False])
def test_fsdp2_gathers_and_reduce_scatters(reshard):
    """Layers resharded after forward are gathered again for backward (2 gathers), otherwise once;
    the root module (embeddings, final norm, output layer) is never resharded after forward."""
    program = ddlsim.capture(partial(hf_fsdp, family="llama", reshard_after_forward=reshard), (DP,), ("dp",))
    with torch.device("meta"):
        model = decoder("llama")
    layer_bytes = sum(_bytes(layer.parameters()) for layer in decoder_layers(model))
    all_bytes = _bytes(model.parameters())
    gathers = 2 if reshard else 1
    assert program.total_bytes("reduce_scatter") == all_bytes
    assert program.total_bytes("all_gather") == gathers * layer_bytes + (all_bytes - layer_bytes)
