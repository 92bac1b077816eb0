"""The interleaved 1F1B pipeline with ``training.overlap_p2p_comm`` true, stepped a round at a
time, all stages at once: `exchanges._overlapped_round` with each stage's waits kept as times.

Per stage: S, when its compute stream is free; Q, when its ``stage<s>_p2p`` stream is free;
`pending`, what its next op waits for; `recv[F/B]`, a posted receive the next step of that kind
waits for; `sent[F/B]`, a posted send it waits for one slot later (-inf: nothing). A round runs
two halves, forwards then backwards. In a half every stage with a step of that kind starts it at
max(S, pending, recv) and frees its stream after the step's body; then every stage posts
(max(pending, S)), and a stage that hands over starts its send on its p2p stream at max(Q, both
sides' posts), or, without a send task, hands over at that time. A receiver in the steady state
(or, for a gradient, one ending its warm-up) waits for it with its next step of that kind; any
other waits for it with its next op. A sender in the steady state waits for its previous send of
that kind now, others for the send just made. A stage's pipeline ends at max(S, pending, its last
gradient send). Laying out every op (`exchanges.py`) gives the same times; a round costs a few
dozen operations on vectors of p, and the steady middle is skipped as in `rounds.py` once a
period has shifted every finite time equally. `busy_s` is the union of the traced stage's step bodies and
sends, which overlap here (its bubble is the rest).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ddlsim.training.schedules.closed_form import PERIODIC_TOLERANCE
from ddlsim.training.schedules.interleaved import last_slot, warmup_steps

NONE = -np.inf
FIELDS = ("S", "Q", "pending", "recvF", "recvB", "sentF", "sentB")


@dataclass(frozen=True)
class OverlappedEnds:
    end_s: np.ndarray  # each stage's pipeline end: what its first tail op waits for
    busy_s: float  # the traced stage's busy time (union of its bodies and sends)
    last_op_end_s: float  # the traced stage's last op end (a send may end after its pipeline, in its tail)
    last_backward_start_s: np.ndarray  # (stages, v): start of B(m - 1)'s body of chunk g p + s
    intervals: list[tuple[float, float]]  # the traced stage's steps and sends ending after its first B(m - 1) starts


class _Rounds:
    """What every stage does in each round, whatever the costs (`interleaved.py`'s numbering),
    built p rounds at a time."""

    def __init__(self, costs: dict[str, np.ndarray], has_send: dict[str, np.ndarray], micro: int) -> None:
        v, p = costs["F"].shape
        self.p, self.v, self.m, self.n = p, v, micro, micro * v
        self.stage = np.arange(p)
        self.warmup = warmup_steps(self.stage, p, v)
        self.costs = {key: value.ravel() for key, value in costs.items()}  # [group, stage] flat
        self.has_send = {key: value.ravel() for key, value in has_send.items()}
        self.block: tuple = ()
        self.first = 0

    def at(self, round_index: int) -> tuple:
        if not self.block or not self.first <= round_index < self.first + self.p:
            self.first, self.block = round_index, self._build(round_index, self.p)
        return self.block[round_index - self.first]

    def _build(self, first: int, count: int) -> list:
        p, v, n, stage = self.p, self.v, self.n, self.stage
        slot = np.arange(first, first + count)[:, None] - stage
        back = slot - self.warmup
        has_f, has_b = (slot >= 0) & (slot < n), (back >= 0) & (back < n)
        group_f = np.where(has_f, (slot // p) % v, 0)
        group_b = np.where(has_b, v - 1 - (back // p) % v, 0)
        send_next = has_f & ((group_f != v - 1) | (stage != p - 1))
        send_prev = has_b & ((group_b != 0) | (stage != 0))
        at_f, at_b = group_f * p + stage, group_b * p + stage
        steady = has_f & has_b
        ending_warmup = has_f & ~has_b & (slot == self.warmup - 1) & (self.warmup - 1 < n - 1)
        halves = []
        last_micro = has_b & (back >= n - p * v) & (back % p == p - 1)  # B(m - 1): where buckets start
        records = np.where(last_micro, group_b, -1)
        for has, sends, at, kind, direction, receiving in ((has_f, send_next, at_f, "F", 1, steady),
                                                             (has_b, send_prev, at_b, "B", -1, steady | ending_warmup)):
            incoming = np.roll(sends, direction, axis=1)  # stage s + direction receives what s sends
            waits_async = incoming & receiving
            halves.append((has, sends, self.costs[kind].take(at), self.costs["t" + kind].take(at),
                           sends & self.has_send[kind].take(at), incoming & ~waits_async, waits_async,
                           sends & ~steady, has.any(axis=1), sends.any(axis=1),
                           records if kind == "B" else np.full_like(records, -1),
                           last_micro.any(axis=1) & (kind == "B")))
        return [(tuple(part[k] for part in halves[0]), tuple(part[k] for part in halves[1]), steady[k])
                for k in range(count)]


def overlapped_ends(forward_s: np.ndarray, backward_s: np.ndarray, forward_send_s: np.ndarray,
                    backward_send_s: np.ndarray, forward_sends: np.ndarray, backward_sends: np.ndarray,
                    micro_batches: int, trace_stage: int) -> OverlappedEnds:
    """Bodies, send times and whether a step has send tasks, indexed [group, stage]; m a multiple of p."""
    costs = {"F": forward_s, "B": backward_s, "tF": forward_send_s, "tB": backward_send_s}
    costs = {key: np.asarray(value, dtype=float) for key, value in costs.items()}
    rounds = _Rounds(costs, {"F": np.asarray(forward_sends, bool), "B": np.asarray(backward_sends, bool)},
                     micro_batches)
    p, v, n = rounds.p, rounds.v, rounds.n
    period = p * v
    last_round = last_slot(0, p, v, micro_batches)
    steady_first, steady_last = int(rounds.warmup[0]), n - 2
    state = {name: np.full(p, NONE) for name in FIELDS}
    state["S"], state["Q"] = np.zeros(p), np.zeros(p)
    intervals: list[tuple[int, float, float]] = []  # (round, start, end) of the traced stage's ops
    skipped_intervals = np.empty((0, 3))
    history: list[dict] = []
    starts = np.full((p, v), np.nan)
    peers = {1: (rounds.stage + 1) % p, -1: (rounds.stage - 1) % p}  # the stage one up / one down
    round_index = 0
    while round_index <= last_round:
        if steady_first <= round_index <= steady_last and round_index - steady_first >= period and \
                (round_index - steady_first) % p == 0:
            jumped = _skip(state, history, round_index, steady_first, steady_last, period)
            if jumped is not None:
                shift, skipped = jumped
                skipped_intervals = _shifted(intervals, round_index, skipped, period, shift)
                round_index = steady_last + 1
                continue
        if steady_first <= round_index <= steady_last:
            history.append(dict(state))
        _round(state, rounds.at(round_index), peers, trace_stage, round_index, intervals, starts)
        round_index += 1
    end = np.maximum(np.maximum(state["S"], state["pending"]), state["sentB"])
    rows = np.concatenate([np.array(intervals).reshape(-1, 3), skipped_intervals])
    busy, last_end = _union(rows)
    # what a gradient bucket may overlap: it starts no earlier than the traced stage's first B(m - 1)
    released = starts[trace_stage][np.isfinite(starts[trace_stage])]
    late = rows[rows[:, 2] > released.min()] if len(released) else rows[:0]
    return OverlappedEnds(end, busy, last_end, starts, [(float(a), float(b)) for _, a, b in late])


def _round(state: dict, table: tuple, peers: dict, trace: int, round_index: int, intervals: list,
           starts: np.ndarray) -> None:
    """One round; every update makes new arrays, so the history keeps each round's state as it was."""
    forward, backward, steady = table
    for kind, half, direction in (("F", forward, 1), ("B", backward, -1)):
        has, sends, body, time_s, transfer, waits, waits_async, blocking, any_step, any_send, groups, record = half
        recv, sent = state["recv" + kind], state["sent" + kind]
        if any_step:
            start = np.maximum(np.maximum(state["S"], state["pending"]), recv)
            state["S"] = np.where(has, start + body, state["S"])
            state["pending"] = np.where(has, NONE, state["pending"])
            state["recv" + kind] = recv = np.where(has, NONE, recv)
            if has[trace]:
                intervals.append((round_index, float(start[trace]), float(state["S"][trace])))
            if record:
                rows = np.flatnonzero(groups >= 0)
                starts[rows, groups[rows]] = start[rows]
        if any_send:
            posted = np.maximum(state["pending"], state["S"])
            deps = np.maximum(posted, posted[peers[direction]])
            send_start = np.maximum(state["Q"], deps)
            state["Q"] = np.where(transfer, send_start + time_s, state["Q"])
            done = np.where(transfer, state["Q"], deps)
            if transfer[trace]:
                intervals.append((round_index, float(send_start[trace]), float(state["Q"][trace])))
            incoming = done[peers[-direction]]
            state["recv" + kind] = np.where(waits_async, incoming, recv)
            pending = np.where(waits, np.maximum(state["pending"], incoming), state["pending"])
            pending = np.where(blocking, np.maximum(pending, done), pending)
            state["pending"] = np.where(steady, np.maximum(pending, sent), pending)
            state["sent" + kind] = np.where(steady, np.where(sends, done, NONE), sent)
        elif steady.any():
            state["pending"] = np.where(steady, np.maximum(state["pending"], sent), state["pending"])
            state["sent" + kind] = np.where(steady, NONE, sent)


def _skip(state: dict, history: list, round_index: int, steady_first: int, steady_last: int,
          period: int) -> tuple[float, int] | None:
    """If the last period shifted every finite time by one amount c (and left -inf alone), jump
    to the end of the middle; return (c, rounds skipped)."""
    done = round_index - steady_first
    before = history[done - period]
    shifts = []
    for name, now in state.items():
        finite = np.isfinite(now)
        if not np.array_equal(finite, np.isfinite(before[name])):
            return None
        shifts.append(now[finite] - before[name][finite])
    moved = np.concatenate(shifts)
    scale = max(float(np.max(np.abs(state["S"]))), 1.0)
    if not len(moved) or moved.max() - moved.min() > PERIODIC_TOLERANCE * scale:
        return None
    shift = float(shifts[0][-1])  # S is always finite
    target = steady_last + 1 - steady_first
    seen = done - period + (target - (done - period)) % period
    source = history[seen] if seen < len(history) else state
    for name in FIELDS:
        state[name] = source[name] + (target - seen) // period * shift
    return shift, target - done


def _shifted(intervals: list, first_skipped: int, skipped: int, period: int, shift: float) -> np.ndarray:
    """The traced stage's ops in the skipped rounds, rows (round, start, end): those of the round a
    whole number of periods before, moved by that many shifts."""
    recorded = np.array([item for item in intervals if first_skipped - period <= item[0] < first_skipped])
    if not len(recorded) or skipped <= 0:
        return np.empty((0, 3))
    periods = np.arange(-(-skipped // period))[:, None]
    k = recorded[None, :, 0] - (first_skipped - period) + periods * period
    moved = np.broadcast_to((periods + 1) * shift, k.shape)
    keep = k < skipped
    starts, ends = (np.broadcast_to(recorded[None, :, column], k.shape)[keep] for column in (1, 2))
    return np.stack([first_skipped + k[keep], starts + moved[keep], ends + moved[keep]], axis=1)


def _union(rows: np.ndarray) -> tuple[float, float]:
    """Total length covered by the intervals (rows: round, start, end), and the latest end."""
    if not len(rows):
        return 0.0, NONE
    last = float(rows[:, 2].max())
    rows = rows[rows[:, 2] > rows[:, 1]]
    if not len(rows):
        return 0.0, last
    rows = rows[np.lexsort((rows[:, 2], rows[:, 1]))]
    reach = np.maximum.accumulate(rows[:, 2])
    previous = np.concatenate(([0.0], reach[:-1]))
    return float(np.clip(rows[:, 2] - np.maximum(rows[:, 1], previous), 0.0, None).sum()), last
