"""Routing and first-fit wavelength assignment (RWA) of one step's lightpaths on a WDM ring.

Nodes 0..N-1 sit on a bidirectional ring. Segment `s` joins node `s` and node `s + 1` (mod N);
it carries clockwise (CW, increasing index) traffic on the CW fibres and counter-clockwise (CCW)
traffic on the CCW fibres, and the two directions have separate channel pools. A lightpath
occupies one channel (fibre, wavelength) on every segment it crosses, for the whole step.

Routing is shortest path. Flows whose two directions are equally long (antipodal pairs on an
even ring) alternate CW / CCW in (source, destination) order, which spreads them evenly over
both directions; an explicit `directions` array overrides the choice.

First fit gives each lightpath of one direction, in turn, the lowest channel that is free on
all its segments. The order: measured from an origin point, the arcs passing through the origin
come first, then the others by start along the ring (longer first on a tie). When some point of
the ring is crossed by no lightpath it is taken as the origin: the arcs are then intervals of a
line, and first fit in start order uses exactly the maximum segment load (the greedy colouring
of intervals sorted by left end is optimal), so that count is computed in O(N + flows) without
a loop. Only arc sets that pass every point (an all-to-all, a ring's wrap-around) are assigned
one by one, from origin node 0, by a sweep; there first fit may need a little more than the
load (an all-to-all among 18 members: 43 channels for a load of 41).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

CW = 0
CCW = 1


@dataclass(frozen=True)
class Arcs:
    """The lightpaths of one direction as segment intervals: segments start .. start+length-1."""

    starts: np.ndarray
    lengths: np.ndarray

    def __len__(self) -> int:
        return int(self.starts.size)


def route_shortest(src: np.ndarray, dst: np.ndarray, num_nodes: int,
                   directions: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(direction, hops) of every flow; flows with src == dst get 0 hops.

    `directions` (CW/CCW per flow) forces the direction; otherwise the shorter way round is
    taken, with ties alternating in (src, dst) order.
    """
    src = np.asarray(src, dtype=np.int64)
    dst = np.asarray(dst, dtype=np.int64)
    cw_hops = (dst - src) % num_nodes
    ccw_hops = (src - dst) % num_nodes
    if directions is not None:
        direction = np.asarray(directions, dtype=np.int8)
    else:
        direction = np.where(cw_hops <= ccw_hops, CW, CCW).astype(np.int8)
        tie = (cw_hops == ccw_hops) & (cw_hops > 0)
        if tie.any():
            tied = np.flatnonzero(tie)
            order = tied[np.lexsort((dst[tied], src[tied]))]
            direction[order[1::2]] = CCW
    hops = np.where(direction == CW, cw_hops, ccw_hops)
    return direction, hops


def arcs_of(src: np.ndarray, dst: np.ndarray, num_nodes: int,
            directions: np.ndarray | None = None) -> tuple[Arcs, Arcs]:
    """The CW and CCW segment intervals of the routed flows (self-flows dropped)."""
    src = np.asarray(src, dtype=np.int64)
    dst = np.asarray(dst, dtype=np.int64)
    direction, hops = route_shortest(src, dst, num_nodes, directions)
    moving = hops > 0
    cw = moving & (direction == CW)
    ccw = moving & (direction == CCW)
    # A CCW path from src down to dst crosses segments dst .. src-1.
    return (Arcs(src[cw] % num_nodes, hops[cw]), Arcs(dst[ccw] % num_nodes, hops[ccw]))


def segment_load(arcs: Arcs, num_nodes: int) -> np.ndarray:
    """How many arcs cross each segment."""
    return _circular_cover(arcs.starts, arcs.lengths, num_nodes)


def _circular_cover(starts: np.ndarray, lengths: np.ndarray, num_nodes: int) -> np.ndarray:
    """Count of intervals [start, start+length) covering each index of a ring of num_nodes."""
    diff = np.zeros(2 * num_nodes + 1, dtype=np.int64)
    if starts.size:
        np.add.at(diff, starts, 1)
        np.add.at(diff, starts + lengths, -1)
    cover = np.cumsum(diff[:-1])
    return cover[:num_nodes] + cover[num_nodes:]


def _crossings(arcs: Arcs, num_nodes: int) -> np.ndarray:
    """How many arcs pass through each node point (enter and leave it), i.e. cannot be cut there."""
    inner = arcs.lengths > 1
    return _circular_cover(arcs.starts[inner] + 1, arcs.lengths[inner] - 1, num_nodes)


def channels_needed(arcs: Arcs, num_nodes: int, limit: int | None = None) -> int:
    """Channels first fit uses for these arcs (see the module docstring for the order).

    With a `limit`, a load above it is returned as is: first fit cannot use fewer channels
    than the load, so the arcs do not fit either way and the slow assignment is skipped.
    """
    if len(arcs) == 0:
        return 0
    load = int(segment_load(arcs, num_nodes).max())
    if (limit is not None and load > limit) or (_crossings(arcs, num_nodes) == 0).any():
        return load
    return int(first_fit(arcs, num_nodes).max()) + 1


def first_fit(arcs: Arcs, num_nodes: int) -> np.ndarray:
    """The channel index first fit gives each arc (in the arcs' own order).

    Coordinates are measured from the origin (a cut point when there is one, else node 0).
    Arcs through the origin come first; no two of them can share a channel (they all contain
    the segments beside the origin), so they take channels 0, 1, ... in turn. The others are
    intervals taken by start, so a channel is free for [s, e) when its last interval ended by
    s and its arc through the origin (if any) resumes at or after e.
    """
    channel = np.empty(len(arcs), dtype=np.int64)
    if len(arcs) == 0:
        return channel
    crossings = _crossings(arcs, num_nodes)
    cuts = np.flatnonzero(crossings == 0)
    origin = int(cuts[0]) if cuts.size else 0
    starts = (arcs.starts - origin) % num_nodes
    ends = starts + arcs.lengths
    through = ends > num_nodes
    order = np.lexsort((-arcs.lengths, starts, ~through))
    busy_until = np.zeros(len(arcs) + 1, dtype=np.int64)
    resumes_at = np.full(len(arcs) + 1, num_nodes, dtype=np.int64)
    used = 0
    for index in order.tolist():
        start, end = int(starts[index]), int(ends[index])
        if end > num_nodes:
            slot = used
            busy_until[slot], resumes_at[slot] = end - num_nodes, start
        else:
            free = (busy_until[:used + 1] <= start) & (resumes_at[:used + 1] >= end)
            slot = int(np.argmax(free))
            busy_until[slot] = end
        channel[index] = slot
        used = max(used, slot + 1)
    return channel


@dataclass(frozen=True)
class Assignment:
    """Result of RWA for one step: channels used per direction and the longest lightpath."""

    cw_channels: int
    ccw_channels: int
    max_hops: int
    num_lightpaths: int

    @property
    def channels(self) -> int:
        return max(self.cw_channels, self.ccw_channels)


def assign(src: np.ndarray, dst: np.ndarray, num_nodes: int, directions: np.ndarray | None = None,
           limit: int | None = None) -> Assignment:
    """Route every (src, dst) flow and count the channels first fit needs per direction.

    Counts above `limit` may be the segment load, a lower bound of first fit (see
    `channels_needed`).
    """
    cw, ccw = arcs_of(src, dst, num_nodes, directions)
    max_hops = int(max(cw.lengths.max(initial=0), ccw.lengths.max(initial=0)))
    return Assignment(channels_needed(cw, num_nodes, limit), channels_needed(ccw, num_nodes, limit), max_hops,
                      len(cw) + len(ccw))
