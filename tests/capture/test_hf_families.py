"""Any transformers decoder family that builds from its config captures (FSDP2 over 4 ranks)."""

from __future__ import annotations

from functools import partial

import pytest
import torch

import ddlsim
from examples.hf_fsdp import FAMILIES, decoder, decoder_layers
from examples.hf_fsdp import build as hf_fsdp


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_family_captures_and_prices(family):
    program = ddlsim.capture(partial(hf_fsdp, family=family), (4,), ("dp",))
    with torch.device("meta"):
        model = decoder(family)
    layers = len(decoder_layers(model))
    calls = program.collective_summary(by=("op", "phase"))
    counts = {(row.op, row.phase): row.count for row in calls.itertuples()}
    assert counts[("all_gather", "forward")] == layers + 1  # every layer, then the root's parameters
    assert counts[("reduce_scatter", "backward")] == layers + 1
    assert program.compute.flop.sum() > 0
    assert ddlsim.simulate(program, fabric="superpod", device="h100_sxm").iteration_time_s > 0
