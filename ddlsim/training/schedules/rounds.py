"""The interleaved 1F1B pipeline with Megatron-Core's blocking exchanges, stepped a round at a
time, all stages at once, skipping the periodic middle.

In round r stage s runs slot q = r - s (`interleaved.py`): the body of its forward step
(without the hand-over send) if 0 <= q < N = m v, the body of its backward step if
0 <= q - w_s < N, then its exchange (`exchanges.py`, ``overlap_p2p_comm`` False). With X_s the
time stage s's stream is free after round r - 1 (indices mod p: stage p - 1 sends to stage 0):

    A_s = X_s + F + B                                              (arrival at the exchange)
    E_s = max(A_s, A_{s-1} if s sends to s - 1, A_{s+1} if s sends to s + 1) + tB_s + tF_s
    X_s = max(E_s, E_{s-1} if s - 1 sent to s, E_{s+1} if s + 1 sent to s)

(tB, tF the gradient and activation hand-overs the stage sends, 0 where it sends none): ten
vector operations per round, the "if"s being gathers from an extra element that holds -inf.
Where a stage s receives its first gradient in a ``recv_backward`` of its own
(`interleaved.separate_backward_receive`), stage s + 1's batch waits for the end of s's first
call rather than its arrival (one scalar fix-up in that round). Between the last warm-up round
(w_0) and the round before stage 0's last forward (N - 2) every stage runs both halves of its
slot and the costs and exchanges repeat every p v rounds, so those rounds form a max-plus
linear map that repeats with that period; once the state has moved by the same amount in every
component over a period (checked every p rounds), the rest of the middle is skipped
(`closed_form.py` explains why this is exact). The work is O((v + 1) p) rounds for warm-up and
cool-down plus one or two periods, whatever m is; a warm-up clipped by few micro-batches
(m v < w_s) is stepped the same way, its empty slots costing nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ddlsim.core.caches import PROCESS_CACHES
from ddlsim.training.schedules.closed_form import PERIODIC_TOLERANCE
from ddlsim.training.schedules.interleaved import last_slot, separate_backward_receive, warmup_steps

FORWARD, BACKWARD, BOTH = 1, 2, 3  # the hand-overs a round sends: activations, gradients, both
# Round structures kept (about 1 MB each at 64 stages x 2 virtual stages).
STRUCTURES_KEPT = 16


@dataclass(frozen=True)
class InterleavedEnds:
    """Per stage: end of its last step, and the start of each chunk's last backward step (by group)."""

    end_s: np.ndarray
    last_backward_start_s: np.ndarray  # (stages, v): start of B(m - 1)'s body of chunk g p + s
    intervals: list[tuple[float, float]]  # the traced stage's ops in the cool-down, (start, end)


class _Tables:
    """Per round, for every stage and a sentinel p (whose times stay -inf): the slot's body cost,
    the hand-overs it sends, whom it waits for before sending (s - 1, s + 1 or the sentinel) and
    whose batch it receives."""

    def __init__(self, costs: dict[str, np.ndarray], micro: int, records: bool = True) -> None:
        v, p = costs["F"].shape
        self.stages, self.virtual, self.micro, self.records = p, v, micro, records
        self.costs = {key: np.vstack([value, np.zeros((1, p))]).ravel() for key, value in costs.items()}  # v: none
        self.warmup = warmup_steps(np.arange(p), p, v)

    def build(self, first: int, count: int) -> tuple:
        key = (self.stages, self.virtual, self.micro, first, count, self.records)
        at_f, at_b, send_next, send_prev, peers, record_rows, splits, sides = PROCESS_CACHES.memo(
            "interleaved round structure", STRUCTURES_KEPT).get_or_make(key, lambda: _structure(*key))
        costs = self.costs
        cost_f = costs["F"].take(at_f)
        cost, sends = np.zeros((count, self.stages + 1)), np.zeros((count, self.stages + 1))
        np.add(cost_f, costs["B"].take(at_b), out=cost[:, :-1])
        np.add(costs["tB"].take(at_b) * send_prev, costs["tF"].take(at_f) * send_next, out=sends[:, :-1])
        records: list = [None] * count  # where the last micro-batch's backward bodies start
        for k, rows, groups in record_rows:
            records[k] = (rows, groups, cost_f[k, rows])
        return cost, peers[0], peers[1], sends, peers[2], peers[3], records, list(splits), sides


def _structure(p: int, v: int, micro: int, first: int, count: int, records: bool) -> tuple:
    """What rounds first .. first + count - 1 look like whatever the costs: the flat [group, stage]
    index of every stage's forward and backward step (v p + stage where it has none), which
    hand-overs it sends, its peers (`_Tables`), the rounds that start a last micro-batch's backward
    and the round of a separate ``recv_backward``. Kept per shape: the pipelines of a sweep share them."""
    n = micro * v
    stage = np.arange(p)
    warmup = warmup_steps(stage, p, v)
    slot = np.arange(first, first + count)[:, None] - stage
    back = slot - warmup
    group_f, group_b = _groups(slot, p, v, n, True), _groups(back, p, v, n, False)  # v: no step
    send_next = (group_f < v) & ((group_f != v - 1) | (stage != p - 1))  # the last chunk sends nothing on
    send_prev = (group_b < v) & ((group_b != 0) | (stage != 0))  # nor does chunk 0 back
    at_f, at_b = group_f * p + stage, group_b * p + stage  # flat [group, stage] indices
    peers = np.full((4, count, p + 1), p)  # to_prev, to_next, from_prev, from_next; p: nobody
    up, down = (stage - 1) % p, (stage + 1) % p
    for row, (mask, neighbour) in enumerate(((send_prev, up), (send_next, down), (send_next[:, up], up),
                                             (send_prev[:, down], down))):
        np.copyto(peers[row, :, :p], neighbour, where=mask)
    record_rows = []
    if records and first + count - 1 >= n - 1:  # the last micro-batch's backwards come after N - 2
        rounds, stages = np.nonzero((group_b < v) & (back >= n - p * v) & (back % p == p - 1))
        record_rows = [(k, stages[begin:end], group_b[k, stages[begin:end]]) for k, begin, end in _runs(rounds)]
    splits: list = [None] * count  # the stage whose recv_backward is a call of its own
    split = np.nonzero(separate_backward_receive(stage, n - 1, p, v, micro))[0]
    if len(split) and first <= n - 1 + int(split[0]) < first + count:  # w_s = N: slot N - 1, round N - 1 + s
        splits[n - 1 + int(split[0]) - first] = int(split[0])
    for array in (at_f, at_b, send_next, send_prev, peers):
        array.flags.writeable = False
    sides = tuple(int(value) for value in send_next.any(axis=1) + 2 * send_prev.any(axis=1))  # FORWARD | BACKWARD
    return at_f, at_b, send_next, send_prev, peers, tuple(record_rows), tuple(splits), sides


def _groups(steps: np.ndarray, stages: int, virtual: int, n: int, forward: bool) -> np.ndarray:
    """The chunk group of every forward (or backward) step, v where there is no such step."""
    low = int(steps.min())
    values = np.arange(low, int(steps.max()) + 1)
    group = (values // stages) % virtual
    group = np.where((values >= 0) & (values < n), group if forward else virtual - 1 - group, virtual)
    return group.take(steps - low)


def _runs(values: np.ndarray) -> list[tuple[int, int, int]]:
    """(value, begin, end) of each run of equal values in a sorted array."""
    if not len(values):
        return []
    edges = np.flatnonzero(np.diff(values)) + 1
    begins = np.concatenate(([0], edges))
    ends = np.concatenate((edges, [len(values)]))
    return [(int(values[b]), int(b), int(e)) for b, e in zip(begins, ends, strict=True)]


def _plain(x: np.ndarray, table: tuple, history: list | None) -> np.ndarray:
    """`run`'s rounds without a separate receive, records or trace, as few operations as possible."""
    maximum = np.maximum
    for cost, to_prev, to_next, sends, from_prev, from_next, _, _, side in zip(*table, strict=True):
        arrive = x + cost
        if side == BOTH:
            end = maximum(arrive, arrive[to_prev])
            maximum(end, arrive[to_next], out=end)
            end += sends
            x = maximum(end, end[from_prev])
            maximum(x, end[from_next], out=x)
        elif side == FORWARD:
            end = maximum(arrive, arrive[to_next])
            end += sends
            x = maximum(end, end[from_prev])
        elif side:
            end = maximum(arrive, arrive[to_prev])
            end += sends
            x = maximum(end, end[from_next])
        else:
            x = arrive
        if history is not None:
            history.append(x)
    return x


def _rows(table: tuple, first: int, count: int) -> tuple:
    return tuple(part[first:first + count] for part in table)


def interleaved_ends(forward_s: np.ndarray, backward_s: np.ndarray, forward_send_s: np.ndarray,
                     backward_send_s: np.ndarray, micro_batches: int, trace_stage: int | None = None,
                     record_starts: bool = True) -> InterleavedEnds:
    """Step bodies and hand-over send times indexed [group, stage] (chunk g p + s); m a multiple
    of p. `trace_stage`: record that stage's op intervals from the end of the steady middle on;
    `record_starts` False leaves `last_backward_start_s` NaN (only gradient buckets need it)."""
    costs = {"F": forward_s, "B": backward_s, "tF": forward_send_s, "tB": backward_send_s}
    costs = {key: np.asarray(value, dtype=float) for key, value in costs.items()}
    virtual, stages = costs["F"].shape
    tables = _Tables(costs, micro_batches, record_starts)
    n, period = micro_batches * virtual, stages * virtual
    last_round = last_slot(0, stages, virtual, micro_batches)
    steady_first, steady_last = int(tables.warmup[0]), n - 2  # rounds that repeat every period
    state = [np.concatenate([np.zeros(stages), [-np.inf]])]
    starts = np.full((stages, virtual), np.nan)
    intervals: list[tuple[float, float]] = []

    history: list[np.ndarray] = []  # the state after each steady round, while looking for the period

    def run(table: tuple, trace: int | None = None, keep: bool = False) -> None:
        x = state[0]
        if trace is None and not any(table[6]) and not any(split is not None for split in table[7]):
            state[0] = _plain(x, table, history if keep else None)
            return
        for cost, to_prev, to_next, sends, from_prev, from_next, record, split, side in zip(*table, strict=True):
            arrive = x + cost
            if side == BOTH:
                end = np.maximum(arrive, arrive[to_prev])
                np.maximum(end, arrive[to_next], out=end)
                end += sends
            elif side:  # one direction: the other's peers are all the sentinel (-inf)
                end = np.maximum(arrive, arrive[to_next if side == FORWARD else to_prev])
                end += sends
            else:
                end = arrive
            if split is not None and to_prev[split + 1] == split:  # s + 1 waits for s's first call
                t = split + 1
                posted = max(end[split], end[from_prev[split]])
                end[t] = max(arrive[t], posted, arrive[to_next[t]]) + sends[t]
            if record is not None:
                starts[record[0], record[1]] = x[record[0]] + record[2]
            if trace is not None:
                intervals.extend(((x[trace], arrive[trace]), (end[trace] - sends[trace], end[trace])))
            if side == BOTH:
                x = np.maximum(end, end[from_prev])
                np.maximum(x, end[from_next], out=x)
            elif side:
                x = np.maximum(end, end[from_prev if side == FORWARD else from_next])
            else:
                x = end
            if keep:
                history.append(x)
        state[0] = x

    round_index = 0
    if steady_first + 2 * period <= steady_last + 1:
        opening = tables.build(0, steady_first + period)
        run(_rows(opening, 0, steady_first))
        steady = _rows(opening, steady_first, period)  # every steady period has the same costs
        history.append(state[0])  # history[k]: the state before round steady_first + k
        while len(history) - 1 + stages <= steady_last + 1 - steady_first:
            run(_rows(steady, (len(history) - 1) % period, stages), keep=True)
            done = len(history) - 1
            if done < period:
                continue
            now = history[done][:stages]
            moved = now - history[done - period][:stages]
            if moved.max() - moved.min() <= PERIODIC_TOLERANCE * max(float(np.max(np.abs(now))), 1.0):
                # every later steady round is a period's shift of one seen in the last period
                target = steady_last + 1 - steady_first
                seen = done - period + (target - (done - period)) % period
                state[0] = history[seen] + (target - seen) // period * float(moved[-1])
                round_index = steady_last + 1
                break
        else:
            round_index = steady_first + len(history) - 1
        while round_index <= steady_last:  # what is left of the middle when no period was found
            offset = (round_index - steady_first) % period
            count = min(period - offset, steady_last + 1 - round_index)
            run(_rows(steady, offset, count))
            round_index += count
    run(tables.build(round_index, last_round + 1 - round_index), trace_stage)  # records and trace all come here
    return InterleavedEnds(state[0][:stages], starts, intervals)
