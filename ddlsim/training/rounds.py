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
    """

    def __init__(self, forward: np.ndarray, backward: np.ndarray, lag_f: np.ndarray, lag_b: np.ndarray,
                 micro_steps: int) -> None:
        self.forward, self.backward, self.lag_f, self.lag_b = forward, backward, lag_f, lag_b
        self.virtual, self.stages = forward.shape
        self.n, self.warmup = micro_steps, warmups(self.stages, self.virtual)

    def build(self, first: int, count: int) -> tuple[list, ...]:
        p, v = self.stages, self.virtual
        stage = np.arange(p)
        q = np.arange(first, first + count)[:, None] - stage[None, :]
        has_f = (q >= 0) & (q < self.n)
        b_step = q - self.warmup[None, :]
        has_b = (b_step >= 0) & (b_step < self.n)
        group_f = np.where(has_f, (q // p) % v, 0)
        group_b = np.where(has_b, v - 1 - (b_step // p) % v, 0)
        cols = np.broadcast_to(stage, q.shape)
        cost_f = np.where(has_f, self.forward[group_f, cols], 0.0)
        cost_b = np.where(has_b, self.backward[group_b, cols], 0.0)
        lag_f = np.full(q.shape, np.inf)
        lag_f[:, 1:] = np.where(has_f[:, 1:], self.lag_f[group_f[:, 1:], cols[:, :-1]], np.inf)
        wrap_f = has_f[:, 0] & (group_f[:, 0] > 0)
        lag_f[:, 0] = np.where(wrap_f, self.lag_f[np.maximum(group_f[:, 0] - 1, 0), p - 1], np.inf)
        lag_b = np.full(q.shape, np.inf)
        lag_b[:, :-1] = np.where(has_b[:, :-1], self.lag_b[group_b[:, :-1], cols[:, 1:]], np.inf)
        wrap_b = has_b[:, -1] & (group_b[:, -1] < v - 1)
        lag_b[:, -1] = np.where(wrap_b, self.lag_b[np.minimum(group_b[:, -1] + 1, v - 1), 0], np.inf)
        last_b = has_b & (b_step >= self.n - p * v) & (b_step % p == p - 1)
        records = [None] * count
        for k in np.nonzero(last_b.any(axis=1))[0]:
            rows = np.nonzero(last_b[k])[0]
            records[k] = (rows, group_b[k, rows])
        return list(cost_f), list(cost_b), list(lag_f), list(lag_b), records


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
