"""Geometry of a 2D torus's rings, shared by the torus fabric and its closed forms: the short way
round a ring, and the loads that flows routed x first, then y, put on the links of each ring.

Node (x, y) is number x + X y. The links of a row (column) form a ring; a flow covers an interval
of links of its row, then of its destination's column.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from ddlsim.network.int_arrays import floor_mod


def usable_links(size: int) -> int:
    """Links per node (or ring cuts) a ring of `size` nodes uses under shortest routing."""
    return 0 if size < 2 else 1 if size == 2 else 2


def short_way(delta: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray]:
    """Direction (True = increasing) and hop count of the shorter way round a ring of `size`."""
    ahead = floor_mod(delta, size)
    forward = ahead <= size // 2
    return forward, np.where(forward, ahead, size - ahead)


def ring_interval_loads(line: np.ndarray, start: np.ndarray, length: np.ndarray, weight: np.ndarray,
                        num_lines: int, ring: int) -> np.ndarray:
    """Loads on the links of `num_lines` rings of `ring` links: each flow covers `length` links
    from `start` onwards (cyclically) on ring `line`. Returns shape (num_lines, ring)."""
    used = np.flatnonzero(np.bincount(line, minlength=num_lines))
    if 2 * used.size <= num_lines:  # few lines carry flows (a tree's upper levels): sum over those only
        compact = np.zeros(num_lines, dtype=np.int64)
        compact[used] = np.arange(used.size)
        loads = np.zeros((num_lines, ring))
        loads[used] = ring_interval_loads(compact[line], start, length, weight, used.size, ring)
        return loads
    width = 2 * ring + 1
    index = np.concatenate([line * width + start, line * width + start + length])
    values = np.concatenate([weight, -weight])
    diff = np.bincount(index, weights=values, minlength=num_lines * width).reshape(num_lines, width)
    covered = np.cumsum(diff, axis=1)[:, :2 * ring]
    return covered[:, :ring] + covered[:, ring:]


def ring_legs(dims: tuple[int, int], x1, y1, x2, forward_x, hops_x, forward_y, hops_y, weights
              ) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, int, int] | None]:
    """The flows' legs on the +x, -x, +y and -y links, each as the `ring_interval_loads` arguments
    (line, start, length, weight, lines, ring), or None where no flow goes that way: the lines of
    the x legs are rows of the torus, those of the y legs its columns."""
    width, height = dims
    for forward in (True, False):
        rows = (forward_x == forward) & (hops_x > 0)
        if not rows.any():
            yield None
            continue
        start = x1[rows] if forward else (x1[rows] - hops_x[rows] + 1) % width
        yield y1[rows], start, hops_x[rows], weights[rows], height, width
    for forward in (True, False):
        rows = (forward_y == forward) & (hops_y > 0)
        if not rows.any():
            yield None
            continue
        start = y1[rows] if forward else (y1[rows] - hops_y[rows] + 1) % height
        yield x2[rows], start, hops_y[rows], weights[rows], width, height


def interval_parts(dims: tuple[int, int], x1, y1, x2, forward_x, hops_x, forward_y, hops_y, weights
                   ) -> Iterator[np.ndarray | None]:
    """Loads of the +x, -x, +y and -y links (None where no flow goes that way), per `ring_legs`."""
    for leg in ring_legs(dims, x1, y1, x2, forward_x, hops_x, forward_y, hops_y, weights):
        yield None if leg is None else ring_interval_loads(*leg)


def interval_max(dims: tuple[int, int], x1, y1, x2, forward_x, hops_x, forward_y, hops_y, weights) -> float:
    """The busiest link's load (the largest of `interval_parts`), without assembling every link's
    when the flows are few and their weights whole numbers (`sparse_interval_max`)."""
    width, height = dims
    legs = ring_legs(dims, x1, y1, x2, forward_x, hops_x, forward_y, hops_y, weights)
    if weights.size * SPARSE_FACTOR < width * height and exact_sums(weights):
        return max(0.0 if leg is None else sparse_interval_max(*leg[:4], leg[5]) for leg in legs)
    return max(0.0 if leg is None else float(ring_interval_loads(*leg).max()) for leg in legs)


SPARSE_FACTOR = 32
"""Flows per link below which sorting the flows' ends beats summing over every link of the torus."""


def exact_sums(weights: np.ndarray) -> bool:
    """True when every partial sum of `weights` is exact (whole numbers, total below 2^52), so
    that summing them in any order gives the same float."""
    return bool(np.all(weights == np.floor(weights))) and float(np.sum(weights)) < 2.0 ** 52


def sparse_interval_max(line: np.ndarray, start: np.ndarray, length: np.ndarray, weight: np.ndarray,
                        ring: int) -> float:
    """The largest load of `ring_interval_loads` (0 without flows), by a sweep over the flows'
    ends, sorted per line with ends before starts at one link: each line's events sum to 0, so a
    running sum over all lines is each link's load at its starts. Exact for `exact_sums` weights."""
    if line.size == 0:
        return 0.0
    stop = start + length
    wraps = stop > ring
    first_stop = np.where(wraps, ring, stop)
    base = line * (ring + 1)
    starts = np.concatenate([base + start, base[wraps]])
    stops = np.concatenate([base + first_stop, base[wraps] + stop[wraps] - ring])
    weights = np.concatenate([weight, weight[wraps]])
    keys = np.concatenate([2 * stops, 2 * starts + 1])
    values = np.concatenate([-weights, weights])
    order = np.argsort(keys, kind="stable")
    return max(0.0, float(np.cumsum(values[order]).max()))
