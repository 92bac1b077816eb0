"""Ring phases along one dimension of a group laid out in mixed radix, in both views.

Positions and chunks share the radix: with dims (k0, k1, ...), position p has coordinate
c_d(p) along dimension d, and chunk j (C = n chunks of size_bytes / n) has digit g_d(j). A
reduce-scatter along d leaves each rank the chunks whose digit d equals its coordinate; an
all-gather along d undoes that. Gather and scatter move chunk groups hop by hop towards or away
from the root's coordinate (a pipeline along the line: pattern classes are the sender's distance
from the root, and each step activates a window of them). The relay all-to-all forwards items
to their destination coordinate, keeping them in place (slots are reused as items leave).

A flat ring is one dimension of size n; the 2D-torus and hierarchical algorithms use more.
"""

from __future__ import annotations

import numpy as np

from ddlsim.network.collectives.builder import Radix, ScheduleBuilder, expand_rows
from ddlsim.network.patterns import shift_pairs
from ddlsim.network.schedule import CompactStep, ExplicitStep, Reduction


def _line_step(radix: Radix, positions: np.ndarray, d: int, offset: int = 1) -> np.ndarray:
    coordinate = radix.digit(positions, d)
    return radix.replace(positions, d, (coordinate + offset) % radix.dims[d])


def reduce_scatter(builder: ScheduleBuilder, radix: Radix, d: int, done: tuple[int, ...]) -> None:
    """Ring reduce-scatter along d; `done` are the dims already reduce-scattered."""
    k, n = radix.dims[d], radix.size
    fraction = builder.payload / radix.span((*done, d))
    pattern = shift_pairs(n, radix.weights[d], k, 1)
    step = CompactStep(pattern, fraction, k - 1, reductions=(Reduction(2, fraction),),
                       label=f"reduce-scatter dim {d}")

    def explicit():
        positions = np.arange(n, dtype=np.int64)
        coordinate = radix.digit(positions, d)
        free = radix.offsets(set(range(len(radix.dims))) - {*done, d})
        for t in range(k - 1):
            fixed = radix.kept(positions, done) + ((coordinate - t - 1) % k) * radix.weights[d]
            src, dst, chunks = expand_rows(positions, _line_step(radix, positions, d), fixed[:, None] + free[None, :])
            yield builder.rows(src, dst, chunks, chunks, True, step)

    builder.add(step, explicit)


def all_gather(builder: ScheduleBuilder, radix: Radix, d: int, owned: tuple[int, ...]) -> None:
    """Ring all-gather along d; `owned` are the dims (other than d) still reduce-scattered."""
    k, n = radix.dims[d], radix.size
    fraction = builder.payload / radix.span((*owned, d))
    pattern = shift_pairs(n, radix.weights[d], k, 1)
    step = CompactStep(pattern, fraction, k - 1, label=f"all-gather dim {d}")

    def explicit():
        positions = np.arange(n, dtype=np.int64)
        coordinate = radix.digit(positions, d)
        free = radix.offsets(set(range(len(radix.dims))) - {*owned, d})
        for t in range(k - 1):
            fixed = radix.kept(positions, owned) + ((coordinate - t) % k) * radix.weights[d]
            src, dst, chunks = expand_rows(positions, _line_step(radix, positions, d), fixed[:, None] + free[None, :])
            yield builder.rows(src, dst, chunks, chunks, False, step)

    builder.add(step, explicit)


def relay_all_to_all(builder: ScheduleBuilder, radix: Radix, d: int) -> None:
    """Store-and-forward all-to-all along d: step t forwards the k - 1 - t item groups in transit."""
    k, n = radix.dims[d], radix.size
    fractions = builder.payload * np.arange(k - 1, 0, -1) / k
    pattern = shift_pairs(n, radix.weights[d], k, 1)
    step = CompactStep(pattern, fractions, k - 1, label=f"relay all-to-all dim {d}")

    def explicit():
        positions = np.arange(n, dtype=np.int64)
        coordinate = radix.digit(positions, d)
        others = radix.offsets(set(range(len(radix.dims))) - {d})
        for t in range(k - 1):
            ahead = np.arange(1, k - t)
            target = (coordinate[:, None] + ahead[None, :]) % k
            slots = target[:, :, None] * radix.weights[d] + others[None, None, :]
            receiver = _line_step(radix, positions, d)
            arriving = target == ((coordinate + 1) % k)[:, None]
            origin = ((coordinate - t) % k)[:, None]
            new_digit = np.where(arriving, origin, target)
            dst_slots = slots + ((new_digit - target) * radix.weights[d])[:, :, None]
            width = slots.shape[1] * slots.shape[2]
            yield builder.rows(np.repeat(positions, width), np.repeat(receiver, width), slots.ravel(),
                               dst_slots.ravel(), False, step)

    builder.add(step, explicit)


def _line_members(radix: Radix, root: int, d: int, fixed_dims: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    """Positions sharing the root's coordinates on `fixed_dims`, and their distance from the root along d."""
    positions = np.arange(radix.size, dtype=np.int64)
    keep = np.ones(radix.size, dtype=bool)
    for e in fixed_dims:
        keep &= radix.digit(positions, e) == radix.digit(np.int64(root), e)
    members = positions[keep]
    distance = (radix.digit(members, d) - radix.digit(np.int64(root), d)) % radix.dims[d]
    return members, distance


def _group_chunks(radix: Radix, holders: np.ndarray, d: int, coordinate: np.ndarray) -> np.ndarray:
    """Chunks whose digits below d match the holder, digit d equals `coordinate`, any digit above d."""
    above = radix.offsets(range(d + 1, len(radix.dims)))
    base = radix.kept(holders, range(d)) + coordinate * radix.weights[d]
    return base[:, None] + above[None, :]


def gather(builder: ScheduleBuilder, radix: Radix, d: int, root: int) -> None:
    """Pipelined ring gather along d towards the root's coordinate (dims above d already gathered)."""
    k, n = radix.dims[d], radix.size
    members, distance = _line_members(radix, root, d, tuple(range(d + 1, len(radix.dims))))
    senders, sender_distance = members[distance >= 1], distance[distance >= 1]
    fraction = builder.payload * radix.span(range(d + 1, len(radix.dims))) / n
    pattern = shift_pairs(n, radix.weights[d], k, 1, positions=senders, classes=sender_distance - 1,
                          key_extra=("gather", root, d))
    steps = np.arange(k - 1)
    step = CompactStep(pattern, fraction, k - 1, windows=(steps, np.full(k - 1, k - 2)), label=f"gather dim {d}")

    def explicit():
        root_coordinate = radix.digit(np.int64(root), d)
        for t in range(k - 1):
            active = sender_distance >= t + 1
            holders = senders[active]
            origin = (root_coordinate + sender_distance[active] - t) % k
            src, dst, chunks = expand_rows(holders, _line_step(radix, holders, d),
                                           _group_chunks(radix, holders, d, origin))
            yield builder.rows(src, dst, chunks, chunks, False, step)

    builder.add(step, explicit)


def scatter(builder: ScheduleBuilder, radix: Radix, d: int, root: int) -> None:
    """Pipelined ring scatter along d from the root's coordinate (dims above d not yet scattered)."""
    k, n = radix.dims[d], radix.size
    members, distance = _line_members(radix, root, d, tuple(range(d + 1, len(radix.dims))))
    senders, sender_distance = members[distance <= k - 2], distance[distance <= k - 2]
    fraction = builder.payload * radix.span(range(d + 1, len(radix.dims))) / n
    pattern = shift_pairs(n, radix.weights[d], k, 1, positions=senders, classes=sender_distance,
                          key_extra=("scatter", root, d))
    steps = np.arange(k - 1)
    step = CompactStep(pattern, fraction, k - 1, windows=(np.zeros(k - 1, dtype=np.int64), steps),
                       label=f"scatter dim {d}")

    def explicit():
        root_coordinate = radix.digit(np.int64(root), d)
        for t in range(k - 1):
            active = sender_distance <= t
            holders = senders[active]
            target = (root_coordinate + k - 1 - t + sender_distance[active]) % k
            src, dst, chunks = expand_rows(holders, _line_step(radix, holders, d),
                                           _group_chunks(radix, holders, d, target))
            yield builder.rows(src, dst, chunks, chunks, False, step)

    builder.add(step, explicit)


__all__ = ["ExplicitStep", "all_gather", "gather", "reduce_scatter", "relay_all_to_all", "scatter"]
