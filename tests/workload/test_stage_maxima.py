"""`plan_fields`' one-pass stage maxima are what `max` gives: the same stage (first of ties) and the same values;
`memory_per_gpu` is the ceiling of every stage's `total_bytes`."""

from __future__ import annotations

import itertools
import math
import random

from ddlsim.workload.transformer.memory import StageMemory, memory_per_gpu
from ddlsim.workload.transformer.workload import _stage_maxima


def test_stage_maxima_match_max_on_random_stages_with_ties():
    generator = random.Random(34)
    for stages_count, _ in itertools.product((1, 2, 3, 16, 64), range(40)):
        stages = tuple(StageMemory(stage, generator.choice((0, 5, 7, 10**9)), generator.choice((0, 3, 2**40)),
                                   generator.choice((0.0, 1.5, 1e10 / 3, 2.0**70)),
                                   generator.choice((0.0, 2.25, 5813567488.0, 1e9 / 7)), stage)
                       for stage in range(stages_count))
        busiest, most_state_bytes, most_activation_bytes = _stage_maxima(stages)
        assert busiest is max(stages, key=lambda memory: memory.params)
        assert most_state_bytes == max(memory.state_bytes for memory in stages)
        assert most_activation_bytes == max(memory.activation_bytes for memory in stages)
        assert memory_per_gpu(stages) == tuple(math.ceil(memory.total_bytes) for memory in stages)
