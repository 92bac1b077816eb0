"""The interleaved (and 1F1B) fast path against the event engine over a grid of real GPT pipelines.

Stages p, virtual stages v, micro-batches m = k p, ``training.overlap_p2p_comm`` off and on,
even stages and uneven ones (``parallel.first_stage_layers`` lighter, ``last_stage_layers``
heavier than the middle stages'), gradient overlap off and on. The fast path answers every one
of them, and every field equals the event simulation's within floating rounding. Random
pipelines with ``overlap_p2p_comm`` are in `test_analytic.py`.
"""

from __future__ import annotations

import itertools

import pytest
from test_analytic import assert_same, both
from training_fakes import AlphaBeta, FlopTimer

import ddlsim.workload.models  # noqa: F401  (registers model=gpt)
from ddlsim.core.registry import MODELS
from ddlsim.training import Overlap, Pricer, TrainingSettings
from ddlsim.workload.parallel import ParallelConfig

GRID = list(itertools.product((2, 3, 4, 6), (1, 2, 3), (1, 2, 5), (False, True), (False, True)))


def gpt_pipeline(stages: int, virtual: int, micro: int, uneven: bool):
    """Middle stages hold 2 v layers; uneven: the first v, the last 3 v."""
    first, last = (virtual, 3 * virtual) if uneven else (2 * virtual, 2 * virtual)
    layers = first + last + 2 * virtual * (stages - 2)
    parallel = ParallelConfig(tensor=1, data=2, pipeline=stages, virtual_stages=virtual, micro_batch=1,
                              first_stage_layers=first if uneven else 0, last_stage_layers=last if uneven else 0)
    model = MODELS.make("gpt", layers=layers, global_batch=2 * micro, d_model=64, heads=4, seq_len=32)
    return model.build_workload(parallel, 80 * 2**30)


@pytest.mark.parametrize(("stages", "virtual", "factor", "p2p", "uneven"), GRID)
@pytest.mark.parametrize("overlap", [Overlap.NONE, Overlap.DP_BACKWARD])
def test_fast_path_equals_the_event_engine(stages, virtual, factor, p2p, uneven, overlap):
    workload = gpt_pipeline(stages, virtual, factor * stages, uneven)
    if uneven:
        layers = workload.plan["stage_layers"]
        assert layers.startswith(str(virtual)) and layers.endswith(str(3 * virtual)), layers
    pricer = Pricer(AlphaBeta(alpha_s=1e-5, bytes_per_s=1e9, reduction_share=0.1), FlopTimer(1e12))
    training = TrainingSettings(overlap=overlap, overlap_p2p_comm=p2p, bucket_size_bytes=2**16)
    analytic, events = both(workload, pricer, training)
    assert analytic is not None
    assert_same(analytic, events)
