"""`peak_in_flight` without interleaving takes `_peak_in_flight`'s first two cases inline: the same
float on a grid of stages, pipelines, micro-batches and weights."""

from __future__ import annotations

import itertools

from ddlsim.workload.transformer.memory import _peak_in_flight, peak_in_flight


def test_one_chunk_matches_the_general_function():
    weights = [0.0, 1.0, 3.5, 1e9 / 3, 5813567488.0, 2.0**60 + 1]
    for pipeline, micro_batches, weight in itertools.product((1, 2, 3, 8, 16, 64), (1, 2, 3, 8, 15, 16, 17, 512),
                                                             weights):
        for stage in range(pipeline):
            got = peak_in_flight((weight,), stage, pipeline, micro_batches)
            expected = _peak_in_flight((weight,), stage, pipeline, micro_batches)
            assert got == expected and type(got) is type(expected), (stage, pipeline, micro_batches, weight)
