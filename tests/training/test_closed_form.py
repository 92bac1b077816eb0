"""The 1F1B closed form and the interleaved round engine against step-by-step references.

The 1F1B reference lays out every step of every stage in the schedule's own order
(`interleaved_order` with one virtual stage): a step starts when its stage is free and its
neighbour has handed the micro-batch over (`lag` before that step's end; an infinite lag hands
nothing over). It is `one_f_one_b.run_pipeline` with one number per step instead of ops. The
interleaved reference is Megatron-Core's own sequence of calls, its p2p calls matched and timed
as blocking batches (`megatron_reference.py`), which knows nothing of rounds.
"""

from __future__ import annotations

import math
import random

import numpy as np
import pytest
from megatron_reference import simulate_program

from ddlsim.training.schedules.closed_form import one_f_one_b_ends
from ddlsim.training.schedules.interleaved import interleaved_order
from ddlsim.training.schedules.rounds import interleaved_ends


def reference_ends(forward, backward, lag_f, lag_b, stages: int, virtual: int, micro: int) -> list[float]:
    """Costs per chunk (stages x virtual of them); the end of every stage's last step."""
    orders = [interleaved_order(stage, stages, virtual, micro) for stage in range(stages)]
    chunks = stages * virtual
    end, handed, position, free = {}, {}, [0] * stages, [0.0] * stages
    remaining = sum(len(order) for order in orders)
    while remaining:
        progressed = False
        for stage in range(stages):
            while position[stage] < len(orders[stage]):
                kind, chunk, micro_batch = orders[stage][position[stage]]
                source = (kind, chunk - 1 if kind == "F" else chunk + 1, micro_batch)
                waits = 0 <= source[1] < chunks
                if waits and source not in end:
                    break
                start = free[stage]
                if waits and handed[source] is not None:
                    start = max(start, handed[source])
                duration, lag = (forward[chunk], lag_f[chunk]) if kind == "F" else (backward[chunk], lag_b[chunk])
                end[(kind, chunk, micro_batch)] = free[stage] = start + duration
                handed[(kind, chunk, micro_batch)] = None if math.isinf(lag) else start + duration - lag
                position[stage] += 1
                remaining -= 1
                progressed = True
        assert progressed
    return free


def random_costs(rng: random.Random, chunks: int, gpt_like: bool):
    if gpt_like:  # equal chunks but the first (embedding) and the last (output layer)
        forward, backward = [1.0] * chunks, [2.0] * chunks
        forward[0], backward[-1] = 1.0 + rng.random(), 2.0 + 2 * rng.random()
    else:
        forward = [rng.choice([0.5, 1.0, 1.5, 3.0]) + rng.random() * 0.01 for _ in range(chunks)]
        backward = [rng.choice([1.0, 2.0, 2.5, 4.0]) for _ in range(chunks)]
    lag_f = [f * rng.choice([0.0, 0.0, 0.3]) for f in forward]
    lag_b = [b * rng.choice([0.0, 0.0, 0.5]) for b in backward]
    return forward, backward, lag_f, lag_b


@pytest.mark.parametrize("seed", range(60))
def test_1f1b_closed_form_equals_the_reference(seed):
    rng = random.Random(seed)
    stages = rng.randint(1, 12)
    micro = rng.choice([rng.randint(1, stages + 1), rng.randint(stages, 3 * stages), rng.randint(2 * stages, 80)])
    forward, backward, lag_f, lag_b = random_costs(rng, stages, rng.random() < 0.4)
    expected = reference_ends(forward, backward, lag_f, lag_b, stages, 1, micro)
    assert one_f_one_b_ends(np.array(forward), np.array(backward), np.array(lag_f), np.array(lag_b), micro) == \
        pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("near", [1e-9, 1e-6, 1e-3])
def test_1f1b_near_ties_between_the_first_and_last_stage(near):
    # Stage 0 grows fastest by a hair; the last stage starts its steady state earlier. The steady
    # rounds take many rounds to settle, so the closed form of the steady middle is used.
    stages, micro = 16, 600
    forward = np.array([1.0 + near] + [0.9] * (stages - 2) + [1.0])
    backward = np.full(stages, 2.0)
    zero = np.zeros(stages)
    expected = reference_ends(list(forward), list(backward), list(zero), list(zero), stages, 1, micro)
    assert one_f_one_b_ends(forward, backward, zero, zero, micro) == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("seed", range(80))
def test_interleaved_rounds_equal_megatrons_calls(seed):
    # Random chunk costs and hand-over times, micro-batches from one group of p (warm-ups clipped,
    # the recv_backward of its own where w_s = m v) to long pipelines whose middle is skipped.
    rng = random.Random(seed)
    stages, virtual = rng.randint(2, 6), rng.randint(2, 4)
    micro = stages * rng.choice([1, 2, 3, 5, 9, 17, 30])
    chunks = stages * virtual
    body = {(kind, chunk): rng.choice([0.5, 1.0, 1.5, 3.0]) + rng.random() * 0.01 for kind in "FB"
            for chunk in range(chunks)}
    send = {(kind, chunk): rng.choice([0.0, 0.1, 0.3, 1.0]) for kind in "FB" for chunk in range(chunks)}
    send[("F", chunks - 1)] = send[("B", 0)] = 0.0  # nothing leaves the last chunk forward, chunk 0 back
    expected = simulate_program(stages, virtual, micro, body, send)

    def table(kind: str, costs: dict) -> np.ndarray:
        return np.array([[costs[(kind, g * stages + s)] for s in range(stages)] for g in range(virtual)])

    result = interleaved_ends(table("F", body), table("B", body), table("F", send), table("B", send), micro)
    assert result.end_s == pytest.approx(expected, rel=1e-12)


def test_interleaved_records_the_last_micro_batch_backward_starts():
    stages, virtual, micro = 3, 2, 6
    ones = np.ones((virtual, stages))
    result = interleaved_ends(ones, 2 * ones, 0 * ones, 0 * ones, micro, trace_stage=0)
    assert not np.isnan(result.last_backward_start_s).any()
    # stage 0 ends with B(m - 1) of chunk 0, whose start is its end less one backward step
    assert result.last_backward_start_s[0, 0] == pytest.approx(result.end_s[0] - 2.0)
    assert result.intervals and all(end >= start for start, end in result.intervals)
