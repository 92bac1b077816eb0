"""The 1F1B pipeline in closed form: when each stage ends its last step, without laying out steps.

Stage s (of p) runs the forward step F_s and the backward step B_s of m micro-batches in 1F1B
order (`one_f_one_b.one_f_one_b_order`): w_s = p - 1 - s forwards, then pairs F(w_s + i), B(i), then
the last w_s backwards. F(s, j) waits for stage s - 1 to hand F(s - 1, j) over, B(s, j) for stage
s + 1 to hand B(s + 1, j) over; a step hands over `lag` before it ends (0 when its send is its
last op). Write u_s(i), v_s(i) for the ends of stage s's i-th pair. The event simulation's
recurrences then read, exactly:

    warm-up   F(s, j), j <= w_s:  a flow shop of identical jobs, so
              u_s(0) = sum_{t<=s} F_t - sum_{t<s} lagF_t + w_s max_{t<=s} F_t
    pairs     u_s(i) = max(v_s(i - 1), u_{s-1}(i - 1) - lagF_{s-1}) + F_s
              v_s(i) = max(u_s(i), v_{s+1}(i) - lagB_{s+1}) + B_s
              (the second is one reverse running maximum per round)
    cool-down stage r's last pair is round m - p + r. Pairs of stages above r do not depend on the
              cool-down of stages below, so D_r = v_r(m - p + r) is the same as in a pipeline
              whose pairs never stop; from D the cool-down is a flow shop again:
              E_s = max_{r>=s} D_r + sum_{u=s}^{r-1} (B_u - lagB_{u+1}) + (p - 1 - r) max_{s<=u<=r} B_u

The rounds are a max-plus linear map that does not change from round to round. Once a round
moves every u and v by the same amount c (checked within floating rounding), every later round
does too, so the remaining rounds are skipped: x(i + k) = x(i) + k c. The work is therefore a
few vector operations per round until the pipeline settles, whatever m is; pipelines that have
not settled after `SETTLING_ROUNDS` rounds take the closed form of `_steady_diagonal`. With
fewer micro-batches than stages (warm-ups cut to m) every round is stepped (`_clipped`). Times
equal the event simulation's within floating rounding (tests/training/test_closed_form.py).
"""

from __future__ import annotations

import numpy as np

# Two rounds are one shift apart when every component moved by the same amount within this
# fraction of the largest time (a few units in the last place of sums of that size).
PERIODIC_TOLERANCE = 1e-12
# Rounds stepped before the closed form of the steady rounds takes over (most pipelines settle
# within them; `_steady_diagonal` costs a few p x p array operations).
SETTLING_ROUNDS = 4
# np.max / ndarray.max and min call these reductions with the same arguments, through Python wrappers
_MAX, _MIN = np.maximum.reduce, np.minimum.reduce


def _descend(u: np.ndarray, backward: np.ndarray, handover: np.ndarray) -> np.ndarray:
    """v_s = B_s + max_{t>=s} (u_t + sum_{k=s+1}^{t} (B_k - lagB_k))."""
    reach = u + handover
    return backward - handover + np.maximum.accumulate(reach[::-1])[::-1]


def one_f_one_b_ends(forward_s: np.ndarray, backward_s: np.ndarray, forward_lag_s: np.ndarray,
                     backward_lag_s: np.ndarray, micro_batches: int) -> np.ndarray:
    """End of every stage's last step (its last backward) under 1F1B.

    Lags must be finite for the hand-overs the schedule uses (forward of stages 0 .. p - 2,
    backward of stages 1 .. p - 1).
    """
    forward = np.asarray(forward_s, dtype=float)
    backward = np.asarray(backward_s, dtype=float)
    stages, m = len(forward), micro_batches
    lag_f = np.asarray(forward_lag_s, dtype=float).copy()
    lag_b = np.asarray(backward_lag_s, dtype=float).copy()
    lag_f[-1] = 0.0  # the last stage's forward and the first stage's backward hand over to nobody
    lag_b[0] = 0.0
    if stages == 1:  # gradient accumulation: F B F B ...
        return np.array([m * (forward[0] + backward[0])])
    if m < stages:
        return _clipped(forward, backward, lag_f, lag_b, m)
    warmup = np.arange(stages - 1, -1, -1, dtype=float)
    lead_in = forward.cumsum() - np.concatenate(([0.0], lag_f[:-1].cumsum()))
    u = lead_in + warmup * np.maximum.accumulate(forward)
    handover = np.concatenate(([0.0], backward[1:] - lag_b[1:])).cumsum()  # sum_{k=1}^{s} (B_k - lagB_k)
    v = _descend(u, backward, handover)
    first_u, first_v = u, v
    last_pair = m - stages  # D_r = v_r(last_pair + r)
    diagonal = np.empty(stages)
    if last_pair == 0:
        diagonal[0] = v[0]
    up = np.empty(stages)
    up[0] = -np.inf
    round_index = 0
    while round_index < last_pair + stages - 1:
        if round_index >= SETTLING_ROUNDS and last_pair >= stages:
            diagonal = _steady_diagonal(first_u, first_v, forward, backward, lag_f, lag_b, last_pair)
            return _cool_down(diagonal, backward, lag_b)
        np.subtract(u[:-1], lag_f[:-1], out=up[1:])
        u_next = np.maximum(v, up) + forward
        v_next = _descend(u_next, backward, handover)
        round_index += 1
        moved_u, moved_v = u_next - u, v_next - v  # how far each time moved in this round
        u, v = u_next, v_next
        reached = round_index - last_pair  # rounds of the cool-down diagonal already known
        if 0 <= reached < stages:
            diagonal[reached] = v[reached]
        spread = max(_MAX(moved_u, axis=None), _MAX(moved_v, axis=None)) - min(_MIN(moved_u, axis=None),
                                                                          _MIN(moved_v, axis=None))
        if spread <= PERIODIC_TOLERANCE * max(float(_MAX(np.abs(v), axis=None)), 1.0):
            rounds = np.arange(stages)
            pending = last_pair + rounds > round_index
            diagonal[pending] = v[pending] + (last_pair + rounds[pending] - round_index) * float(moved_v[-1])
            break
    return _cool_down(diagonal, backward, lag_b)


def _clipped(forward: np.ndarray, backward: np.ndarray, lag_f: np.ndarray, lag_b: np.ndarray, m: int) -> np.ndarray:
    """Fewer micro-batches than stages (the warm-up is cut to m): step every round. In round r
    stage s runs F(r - s), then every stage runs B(r - p + 1), the backwards descending."""
    stages = len(forward)
    handover = np.cumsum(np.concatenate(([0.0], backward[1:] - lag_b[1:])))
    a, b = np.zeros(stages), np.zeros(stages)
    up = np.full(stages, -np.inf)
    slot = np.arange(m + stages - 1)[:, None] - np.arange(stages)  # F(slot) of stage s in each round
    running = (slot >= 0) & (slot < m)
    for round_index, runs in enumerate(running):
        up[1:] = a[:-1] - lag_f[:-1]
        a = np.where(runs, np.maximum(b, up) + forward, b)
        b = _descend(a, backward, handover) if round_index >= stages - 1 else a
    return b


def _steady_diagonal(u0: np.ndarray, v0: np.ndarray, forward: np.ndarray, backward: np.ndarray, lag_f: np.ndarray,
                     lag_b: np.ndarray, last_pair: int) -> np.ndarray:
    """D_s = v_s(last_pair + s) in closed form, for last_pair >= p (see the module docstring).

    In round space a path either stays on stage t for a round (F_t + B_t), climbs one stage per
    round, or descends within a round. Stays anywhere can be moved to the fastest-growing stage
    the path visits, and detours above or below it flattened into stays there, so the longest
    path from round 0 is a climb or descent to some t, n - (rounds used) stays on t, and a climb
    or descent to s: D_s = max_t (Entry_t + n R_t + Exit_ts), every route fitting in n >= p rounds.
    """
    stages = len(forward)
    rate = forward + backward
    climb = np.concatenate(([0.0], np.cumsum(forward[1:] - lag_f[:-1])))  # u_0 -> u_t, one stage a round
    fall = np.concatenate(([0.0], np.cumsum(backward[:-1] - lag_b[1:])))  # v_t -> v_0 within a round
    r, t = np.indices((stages, stages))
    below = r < t
    from_v = v0[r] + forward[r] + climb[t] - climb[r] + backward[t] - (t - r + 1) * rate[t]
    from_u = u0[r] + climb[t] - climb[r] + backward[t] - (t - r) * rate[t]
    entry = np.maximum(v0, _MAX(np.where(below, np.maximum(from_v, from_u), -np.inf), axis=0))
    stay, target = r, t  # exit_[t, s]: from staying on t to v_s
    exit_ = np.where(target <= stay, fall[stay] - fall[target],
                     forward[stay] + climb[target] - climb[stay] + backward[target] - (target - stay + 1) * rate[stay])
    rounds = last_pair + np.arange(stages)
    return _MAX(entry[:, None] + rounds[None, :] * rate[:, None] + exit_, axis=0)


def _cool_down(diagonal: np.ndarray, backward: np.ndarray, lag_b: np.ndarray) -> np.ndarray:
    """E_s = max_{r>=s} D_r + sum_{u=s}^{r-1} (B_u - lagB_{u+1}) + (p - 1 - r) max_{s<=u<=r} B_u."""
    stages = len(diagonal)
    steps = backward[:-1] - lag_b[1:]
    prefix = np.concatenate(([0.0], np.cumsum(steps)))  # prefix[r] = sum_{u<r} steps_u
    index = np.arange(stages)  # rows s, columns r: broadcast, the same sums as indexing every element
    upper = index[None, :] >= index[:, None]
    ranged = np.where(upper, backward[None, :], -np.inf)
    widest = np.maximum.accumulate(ranged, axis=1)  # max_{s<=u<=r} B_u
    value = (diagonal + prefix)[None, :] - prefix[:, None] + (stages - 1 - index)[None, :] * widest
    return _MAX(np.where(upper, value, -np.inf), axis=1)
