"""Many packet FIFOs operated on in batches: the data structure behind the packet models.

Thousands of queues (one per transmitter or switch port) are stored as singly linked lists over
one shared pool of packet records, so that enqueueing a batch of packets into arbitrary queues,
reading every queue's head and popping a set of queues are each a handful of numpy operations,
whatever the number of queues. Packet records are numpy columns (`fields`), recycled through a
free list, and the pool doubles when it runs out.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

EMPTY = -1


def occurrence_rank(keys: np.ndarray) -> np.ndarray:
    """For each element, how many earlier elements share its key ([3, 1, 3, 3] -> [0, 0, 1, 2])."""
    keys = np.asarray(keys)
    if keys.size == 0:
        return np.zeros(0, dtype=np.int64)
    order = np.argsort(keys, kind="stable")
    sorted_keys = keys[order]
    run_start = np.empty(keys.size, dtype=bool)
    run_start[0] = True
    np.not_equal(sorted_keys[1:], sorted_keys[:-1], out=run_start[1:])
    starts = np.flatnonzero(run_start)
    run_of = np.cumsum(run_start) - 1
    rank = np.empty(keys.size, dtype=np.int64)
    rank[order] = np.arange(keys.size) - starts[run_of]
    return rank


class FifoBank:
    """`num_queues` FIFO queues of packet records with the given numpy field dtypes."""

    def __init__(self, num_queues: int, fields: Mapping[str, np.dtype | type], initial_capacity: int = 1024) -> None:
        self.num_queues = int(num_queues)
        self.head = np.full(self.num_queues, EMPTY, dtype=np.int64)
        self.tail = np.full(self.num_queues, EMPTY, dtype=np.int64)
        self.length = np.zeros(self.num_queues, dtype=np.int64)
        capacity = max(16, int(initial_capacity))
        self._dtypes = {name: np.dtype(dtype) for name, dtype in fields.items()}
        self.fields: dict[str, np.ndarray] = {name: np.zeros(capacity, dtype=dt) for name, dt in self._dtypes.items()}
        self._next = np.full(capacity, EMPTY, dtype=np.int64)
        self._free = np.arange(capacity - 1, -1, -1, dtype=np.int64)  # a stack: pop from the end
        self._num_free = capacity

    # --- packet pool ---------------------------------------------------------------------------
    @property
    def capacity(self) -> int:
        return self._next.size

    @property
    def num_live(self) -> int:
        return self.capacity - self._num_free

    def _grow(self, needed: int) -> None:
        old = self.capacity
        new = old
        while new - old + self._num_free < needed:
            new *= 2
        for name, column in self.fields.items():
            grown = np.zeros(new, dtype=column.dtype)
            grown[:old] = column
            self.fields[name] = grown
        self._next = np.concatenate([self._next, np.full(new - old, EMPTY, dtype=np.int64)])
        free = np.empty(new, dtype=np.int64)
        free[: new - old] = np.arange(new - 1, old - 1, -1)
        free[new - old : new - old + self._num_free] = self._free[: self._num_free]
        self._free = free
        self._num_free += new - old

    def allocate(self, count: int, **values: np.ndarray) -> np.ndarray:
        """Take `count` packet ids from the pool and set their fields."""
        if count > self._num_free:
            self._grow(count)
        ids = self._free[self._num_free - count : self._num_free][::-1].copy()
        self._num_free -= count
        for name, value in values.items():
            self.fields[name][ids] = value
        return ids

    def release(self, ids: np.ndarray) -> None:
        """Return packets (already removed from their queues) to the pool."""
        ids = np.asarray(ids, dtype=np.int64)
        self._free[self._num_free : self._num_free + ids.size] = ids
        self._num_free += ids.size

    # --- queues ----------------------------------------------------------------------------------
    def enqueue(self, queues: np.ndarray, ids: np.ndarray, *, distinct: bool = False) -> None:
        """Append packets `ids` to `queues` (same length); several may go to one queue, in order.

        With `distinct=True` the caller promises that no queue appears twice (a faster path).
        """
        queues = np.asarray(queues, dtype=np.int64)
        ids = np.asarray(ids, dtype=np.int64)
        if queues.size == 0:
            return
        if distinct:
            self._next[ids] = EMPTY
            was_empty = self.length[queues] == 0
            self.head[queues[was_empty]] = ids[was_empty]
            self._next[self.tail[queues[~was_empty]]] = ids[~was_empty]
            self.tail[queues] = ids
            self.length[queues] += 1
            return
        order = np.argsort(queues, kind="stable")
        q_sorted, id_sorted = queues[order], ids[order]
        last_of_run = np.empty(q_sorted.size, dtype=bool)
        last_of_run[-1] = True
        np.not_equal(q_sorted[1:], q_sorted[:-1], out=last_of_run[:-1])
        first_of_run = np.empty_like(last_of_run)
        first_of_run[0] = True
        first_of_run[1:] = last_of_run[:-1]
        # chain consecutive packets of one queue; the last of each run ends its list
        self._next[id_sorted[:-1]] = np.where(last_of_run[:-1], EMPTY, id_sorted[1:])
        self._next[id_sorted[-1]] = EMPTY
        run_queues = q_sorted[first_of_run]
        run_firsts = id_sorted[first_of_run]
        run_lasts = id_sorted[last_of_run]
        was_empty = self.length[run_queues] == 0
        self.head[run_queues[was_empty]] = run_firsts[was_empty]
        self._next[self.tail[run_queues[~was_empty]]] = run_firsts[~was_empty]
        self.tail[run_queues] = run_lasts
        run_starts = np.flatnonzero(first_of_run)
        self.length[run_queues] += np.diff(run_starts, append=q_sorted.size)

    def pop(self, queues: np.ndarray) -> np.ndarray:
        """Remove and return the head packet of each of `queues` (distinct, non-empty queues)."""
        queues = np.asarray(queues, dtype=np.int64)
        ids = self.head[queues]
        self.head[queues] = self._next[ids]
        self.length[queues] -= 1
        self.tail[queues[self.length[queues] == 0]] = EMPTY
        return ids

    def queue_contents(self, queue: int) -> list[int]:
        """Packet ids of one queue, head first (for tests and debugging; not vectorised)."""
        out = []
        pid = int(self.head[queue])
        while pid != EMPTY:
            out.append(pid)
            pid = int(self._next[pid])
        return out
