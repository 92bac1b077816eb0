"""The interleaved 1F1B pipeline stepped a round at a time, all stages at once, skipping the
periodic middle.

Stage s runs slots q = 0, 1, ...: slot q is forward micro-step q (if q < N = m v), then backward
micro-step q - w_s (if q >= w_s), with w_s = 2 (p - s - 1) + (v - 1) p the warm-up of
`interleaved.interleaved_order`. Forward micro-step q is chunk group (q // p) mod v, backward
micro-step i is group v - 1 - (i // p) mod v; micro-step indices of one (group, micro-batch)
are the same on every stage. Hence slot q of stage s depends on

    its own slot q - 1 (the stream),
    slot q of stage s - 1 (forward hand-over; for stage 0 and group g > 0: slot q - p of stage
        p - 1, the previous chunk), and
    slot q - 2 of stage s + 1 (backward hand-over; for stage p - 1 and group g < v - 1: slot
        q + p - 2 of stage 0),

so in round r = q + s every stage's slot depends only on round r - 1: a round is a handful of
vector operations over the stages. Between the last warm-up round and the first cool-down round
every stage runs both halves of its slot and the costs repeat every p v rounds, so the rounds
form a max-plus linear map that repeats with that period; once a period moves every time by the
same amount, the rest of the middle is skipped (`closed_form.py` explains why this is exact).
The work is O((v + 1) p) rounds for warm-up and cool-down plus two or three periods, whatever m
is. It needs the warm-up unclipped (m v >= w_0); `analytic.py` falls back to the event
simulation otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ddlsim.training.closed_form import PERIODIC_TOLERANCE


@dataclass(frozen=True)
class InterleavedEnds:
    """Per stage: end of its last step, and the start of each chunk's last backward step (by group)."""

    end_s: np.ndarray
    last_backward_start_s: np.ndarray  # (stages, v): start of B(m - 1) of chunk g p + s
    intervals: list[tuple[float, float]]  # the traced stage's steps in the cool-down, (start, end)


def warmups(stages: int, virtual: int) -> np.ndarray:
    """Megatron's warm-up 2 (p - s - 1) + (v - 1) p of every stage, before clipping to m v."""
    return 2 * (stages - 1 - np.arange(stages)) + (virtual - 1) * stages


class _Tables:
    """Costs and hand-over lags of every stage's two halves in a range of rounds.

    In round r stage s runs forward micro-step r - s and backward micro-step r - s - w_s, where
    w_s is the unclipped warm-up: with few micro-batches (m v < w_s) a stage runs all its
    forwards and then, later rounds, all its backwards, which is Megatron's clipped order.
    Lookups go through tables indexed [group, stage] with one extra group v for "no such half"
    (cost 0, nothing handed over), so a range of rounds is a few gathers.
    """

    def __init__(self, forward: np.ndarray, backward: np.ndarray, lag_f: np.ndarray, lag_b: np.ndarray,
                 micro_steps: int) -> None:
        v, p = forward.shape
        self.virtual, self.stages = v, p
        self.n, self.warmup = micro_steps, warmups(p, v)
        none = np.zeros((1, p))
        self.forward = np.vstack([forward, none])
        self.backward = np.vstack([backward, none])
        # the lag of the step a stage waits for: stage s - 1's (stage 0: chunk g p - 1, stage p - 1's
        # of group g - 1), and for backward stage s + 1's (stage p - 1: stage 0's of group g + 1)
        source_f = np.full((v + 1, p), np.inf)
        source_f[:v, 1:] = lag_f[:, :-1]
        source_f[1:v, 0] = lag_f[:-1, -1]
        source_b = np.full((v + 1, p), np.inf)
        source_b[:v, :-1] = lag_b[:, 1:]
        source_b[:v - 1, -1] = lag_b[1:, 0]
        self.source_f, self.source_b = source_f, source_b

    def build(self, first: int, count: int) -> tuple:
        p, v = self.stages, self.virtual
        stage = np.arange(p)
        q = np.arange(first, first + count)[:, None] - stage
        b_step = q - self.warmup
        group_f = np.where((q >= 0) & (q < self.n), (q // p) % v, v)
        has_b = (b_step >= 0) & (b_step < self.n)
        group_b = np.where(has_b, v - 1 - (b_step // p) % v, v)
        last_b = has_b & (b_step >= self.n - p * v) & (b_step % p == p - 1)
        records = [None] * count
        for k in np.nonzero(last_b.any(axis=1))[0]:
            rows = np.nonzero(last_b[k])[0]
            records[k] = (rows, group_b[k, rows])
        return (self.forward[group_f, stage], self.backward[group_b, stage], self.source_f[group_f, stage],
                self.source_b[group_b, stage], records)


def interleaved_ends(forward_s: np.ndarray, backward_s: np.ndarray, forward_lag_s: np.ndarray,
                     backward_lag_s: np.ndarray, micro_batches: int, trace_stage: int | None = None
                     ) -> InterleavedEnds:
    """Step durations and lags indexed [group, stage] (chunk g p + s); m a multiple of p. Infinite
    lags mean the step hands nothing over. `trace_stage`: record that stage's step intervals from
    the end of the steady middle on."""
    forward, backward = np.asarray(forward_s, dtype=float), np.asarray(backward_s, dtype=float)
    virtual, stages = forward.shape
    n = micro_batches * virtual
    tables = _Tables(forward, backward, np.asarray(forward_lag_s, dtype=float),
                     np.asarray(backward_lag_s, dtype=float), n)
    period = stages * virtual
    last_round = n - 1 + int(tables.warmup[0])
    steady_first, steady_last = int(tables.warmup[0]), n - 1  # rounds in which every stage runs both halves
    state = [np.zeros(stages), np.zeros(stages)]  # a (end of forward halves), b (end of slots)
    starts = np.full((stages, virtual), np.nan)
    up_index = np.roll(np.arange(stages), 1)  # stage s reads stage s - 1 (stage 0: stage p - 1)
    down_index = np.roll(np.arange(stages), -1)
    intervals: list[tuple[float, float]] = []

    def run(table: tuple[list, ...], trace: int | None = None) -> None:
        a, b = state
        for cf, cb, lf, lb, record in zip(*table, strict=True):
            a_start = np.maximum(b, a[up_index] - lf)
            a = a_start + cf
            start = np.maximum(a, b[down_index] - lb)
            b = start + cb
            if record is not None:
                starts[record] = start[record[0]]
            if trace is not None:
                intervals.append((float(a_start[trace]), float(a[trace])))
                intervals.append((float(start[trace]), float(b[trace])))
        state[:] = [a, b]

    round_index = 0
    if steady_first + 2 * period <= steady_last + 1:
        # warm-up, then whole periods of the steady middle until one shifts every time equally
        run(tables.build(0, steady_first))
        round_index = steady_first
        steady = tables.build(steady_first, period)  # every steady period has the same costs
        while round_index + period <= steady_last + 1:
            before = np.concatenate(state)
            run(steady)
            round_index += period
            moved = np.concatenate(state) - before
            if moved.max() - moved.min() <= PERIODIC_TOLERANCE * max(float(np.max(np.abs(state[1]))), 1.0):
                skipped = (steady_last + 1 - round_index) // period
                state[:] = [part + skipped * float(moved[-1]) for part in state]
                round_index += skipped * period
                break
    run(tables.build(round_index, last_round + 1 - round_index), trace_stage)
    return InterleavedEnds(state[1], starts, intervals)
