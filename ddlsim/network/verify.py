"""Functional verification: run an explicit schedule on arrays and check what the op means.

Every rank starts with random 64-bit values in the slots its op gives it (see `initial_state`);
reductions add modulo 2**64, so a result equals the expected sum only if every contribution
arrived exactly once. Sending a slot that holds nothing, adding into an empty slot, two writes
to one slot in a step, or a multicast step whose copies differ are errors too. The barrier is
checked by tracking which ranks each slot has heard from: in the end every rank must have heard
from every rank.

Chunk layout of the op's buffer (C = num_chunks slots, q = C / n per rank):
all_reduce / reduce / broadcast: the whole buffer; reduce_scatter / scatter: rank i ends with
slots [i q, (i + 1) q); all_gather / gather: rank i starts with slots [i q, (i + 1) q);
all_to_all: rank i's block j (slots [j q, (j + 1) q)) ends as block i of rank j.
"""

from __future__ import annotations

import numpy as np

from ddlsim.core.types import CollectiveOp
from ddlsim.network.schedule import ExplicitSchedule, ExplicitStep

Op = CollectiveOp


class ScheduleError(AssertionError):
    """An explicit schedule does not do what its op means (the message says where)."""


def _fail(schedule: ExplicitSchedule, message: str) -> None:
    raise ScheduleError(f"{schedule.algorithm} {schedule.op.value} on {schedule.group_size} ranks "
                        f"(root {schedule.root}): {message}")


def initial_state(schedule: ExplicitSchedule, inputs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Slot values and validity before the first step, from `inputs[rank, chunk]`."""
    n, chunks, root = schedule.group_size, schedule.num_chunks, schedule.root
    values = np.zeros((n, schedule.num_slots), dtype=np.uint64)
    valid = np.zeros((n, schedule.num_slots), dtype=bool)
    op = schedule.op
    if op in (Op.ALL_REDUCE, Op.REDUCE_SCATTER, Op.REDUCE, Op.ALL_TO_ALL, Op.BARRIER):
        values[:, :chunks], valid[:, :chunks] = inputs, True
    elif op in (Op.ALL_GATHER, Op.GATHER):
        q = chunks // n
        for rank in range(n):
            values[rank, rank * q:(rank + 1) * q] = inputs[rank, rank * q:(rank + 1) * q]
            valid[rank, rank * q:(rank + 1) * q] = True
    else:  # broadcast, scatter, send_recv: only the root (sender) holds data
        values[root, :chunks], valid[root, :chunks] = inputs[root], True
    return values, valid


def _apply_step(schedule: ExplicitSchedule, index: int, step: ExplicitStep, values: np.ndarray, valid: np.ndarray,
                heard: np.ndarray | None) -> None:
    where = f"step {index} ({step.label})"
    if np.any(step.src == step.dst):
        _fail(schedule, f"{where}: a rank sends to itself")
    if not np.all(valid[step.src, step.src_slot]):
        bad = np.flatnonzero(~valid[step.src, step.src_slot])[0]
        _fail(schedule, f"{where}: rank {step.src[bad]} sends slot {step.src_slot[bad]}, which holds nothing")
    if step.multicast:
        _check_multicast(schedule, where, step)
    payload = values[step.src, step.src_slot]
    news = heard[step.src, step.src_slot] if heard is not None else None
    slots = schedule.num_slots
    target = step.dst * slots + step.dst_slot
    copies, adds = ~step.reduce, step.reduce
    if np.unique(target[copies]).size != np.count_nonzero(copies):
        _fail(schedule, f"{where}: two copies land in the same slot")
    if np.intersect1d(target[copies], target[adds]).size:
        _fail(schedule, f"{where}: a slot is both overwritten and added to")
    if not np.all(valid[step.dst[adds], step.dst_slot[adds]]):
        bad = np.flatnonzero(~valid[step.dst[adds], step.dst_slot[adds]])[0]
        _fail(schedule, f"{where}: rank {step.dst[adds][bad]} adds into empty slot {step.dst_slot[adds][bad]}")
    flat_values, flat_valid = values.reshape(-1), valid.reshape(-1)
    flat_values[target[copies]] = payload[copies]
    flat_valid[target[copies]] = True
    np.add.at(flat_values, target[adds], payload[adds])
    if heard is not None:
        flat_heard = heard.reshape(-1, heard.shape[2])
        flat_heard[target[copies]] = news[copies]
        np.logical_or.at(flat_heard, target[adds], news[adds])
    if step.local_perm is not None:
        rows = np.arange(values.shape[0])[:, None]
        values[:] = values[rows, step.local_perm]
        valid[:] = valid[rows, step.local_perm]
        if heard is not None:
            heard[:] = heard[rows, step.local_perm]


def _check_multicast(schedule: ExplicitSchedule, where: str, step: ExplicitStep) -> None:
    """Every receiver of a multicast source gets exactly the same set of its slots."""
    n, slots = schedule.group_size, schedule.num_slots
    rows = (step.src * n + step.dst) * slots + step.src_slot
    if np.unique(rows).size != rows.size:
        _fail(schedule, f"{where}: a multicast step sends the same slot twice to one rank")
    pairs, rows_per_pair = np.unique(step.src * n + step.dst, return_counts=True)
    sent, receivers_per_slot = np.unique(step.src * slots + step.src_slot, return_counts=True)
    receivers = np.bincount(pairs // n, minlength=n)
    distinct_slots = np.bincount(sent // slots, minlength=n)
    if np.any(rows_per_pair != distinct_slots[pairs // n]) or np.any(receivers_per_slot != receivers[sent // slots]):
        bad = int(pairs[np.argmax(rows_per_pair != distinct_slots[pairs // n])] // n)
        _fail(schedule, f"{where}: multicast from rank {bad} sends different data to different ranks")


def execute(schedule: ExplicitSchedule, inputs: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """Final (values, valid, heard) after running every step; `heard` only for the barrier."""
    values, valid = initial_state(schedule, inputs)
    heard = None
    if schedule.op is Op.BARRIER:
        heard = np.zeros((schedule.group_size, schedule.num_slots, schedule.group_size), dtype=bool)
        heard[np.arange(schedule.group_size), :, np.arange(schedule.group_size)] = True
    for index, step in enumerate(schedule.steps):
        _apply_step(schedule, index, step, values, valid, heard)
    return values, valid, heard


def expected_output(schedule: ExplicitSchedule, inputs: np.ndarray) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """For each rank that must hold a result: (slot indices, expected values)."""
    n, chunks, root, op = schedule.group_size, schedule.num_chunks, schedule.root, schedule.op
    q = chunks // n if chunks % n == 0 else 0
    total = inputs.sum(axis=0, dtype=np.uint64)
    everything = np.arange(chunks)
    if op is Op.ALL_REDUCE:
        return {rank: (everything, total) for rank in range(n)}
    if op is Op.REDUCE:
        return {root: (everything, total)}
    if op is Op.REDUCE_SCATTER:
        return {rank: (np.arange(rank * q, (rank + 1) * q), total[rank * q:(rank + 1) * q]) for rank in range(n)}
    gathered = inputs[everything // q, everything] if q else None
    if op is Op.ALL_GATHER:
        return {rank: (everything, gathered) for rank in range(n)}
    if op is Op.GATHER:
        return {root: (everything, gathered)}
    if op is Op.BROADCAST:
        return {rank: (everything, inputs[root]) for rank in range(n)}
    if op is Op.SCATTER:
        return {rank: (np.arange(rank * q, (rank + 1) * q), inputs[root, rank * q:(rank + 1) * q]) for rank in range(n)}
    if op is Op.SEND_RECV:
        return {1 - root: (everything, inputs[root])}
    if op is Op.ALL_TO_ALL:
        block, offset = everything // q, everything % q
        return {rank: (everything, inputs[block, rank * q + offset]) for rank in range(n)}
    return {}


def verify_explicit(schedule: ExplicitSchedule, seed: int = 0) -> None:
    """Run `schedule` on random data; raise `ScheduleError` unless it does what its op means."""
    n, chunks = schedule.group_size, schedule.num_chunks
    if schedule.op in (Op.REDUCE_SCATTER, Op.ALL_GATHER, Op.GATHER, Op.SCATTER, Op.ALL_TO_ALL) and chunks % n:
        _fail(schedule, f"{chunks} chunks cannot be split evenly over {n} ranks")
    rng = np.random.default_rng(seed)
    inputs = rng.integers(0, np.iinfo(np.uint64).max, size=(n, chunks), dtype=np.uint64, endpoint=True)
    values, valid, heard = execute(schedule, inputs)
    if schedule.op is Op.BARRIER:
        deaf = np.flatnonzero(~heard.any(axis=1).all(axis=1))
        if deaf.size:
            missing = np.flatnonzero(~heard[deaf[0]].any(axis=0))
            _fail(schedule, f"rank {deaf[0]} leaves the barrier without hearing from ranks {missing[:8].tolist()}")
        return
    for rank, (slots, expected) in expected_output(schedule, inputs).items():
        if not np.all(valid[rank, slots]):
            _fail(schedule, f"rank {rank} ends with empty slots {slots[~valid[rank, slots]][:8].tolist()}")
        wrong = np.flatnonzero(values[rank, slots] != expected)
        if wrong.size:
            _fail(schedule, f"rank {rank} holds wrong data in slots {slots[wrong][:8].tolist()}")


def _aggregate(src: np.ndarray, dst: np.ndarray, amount: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    key = src * n + dst
    unique, inverse = np.unique(key, return_inverse=True)
    return unique, np.bincount(inverse.ravel(), weights=amount, minlength=unique.size)


def _explicit_local_work(explicit: ExplicitSchedule, step: ExplicitStep) -> tuple[float, float, float]:
    """Busiest rank's (reduction memory traffic, reduction arithmetic, copied bytes), as fractions."""
    n, slots, chunk = explicit.group_size, explicit.num_slots, explicit.chunk_fraction
    memory, flop = np.zeros(n), np.zeros(n)
    if np.any(step.reduce):
        unique, counts = np.unique(step.dst[step.reduce] * slots + step.dst_slot[step.reduce], return_counts=True)
        np.add.at(memory, unique // slots, (counts + 2) * chunk)
        np.add.at(flop, unique // slots, counts * chunk)
    copied = 0.0
    if step.local_perm is not None:
        moved = np.count_nonzero(step.local_perm != np.arange(slots)[None, :], axis=1)
        copied = float(moved.max()) * chunk
    return float(memory.max()), float(flop.max()), copied


def compare_views(schedule, explicit: ExplicitSchedule, rtol: float = 1e-9) -> None:
    """Check that the compact `schedule` unrolls to exactly the steps of `explicit`: the same
    (src, dst, bytes) in every step, the same multicast flags, circuits and local work."""
    n = schedule.group_size
    steps = iter(enumerate(explicit.steps))
    for number, step in enumerate(schedule.steps):
        listed = step.pattern.pairs() if step.is_communication else None
        fractions = step.fractions()
        for repetition in range(step.repeat):
            index, other = next(steps, (None, None))
            where = f"compact step {number} ({step.label}) repetition {repetition}"
            if other is None:
                _fail(explicit, f"{where}: the explicit view has no more steps")
            if step.is_communication != other.is_communication:
                _fail(explicit, f"{where}: explicit step {index} differs in having transfers")
            if step.is_communication:
                keep = np.ones(listed.src.size, dtype=bool)
                if step.windows is not None:
                    low, high = step.windows[0][repetition], step.windows[1][repetition]
                    keep = (listed.classes >= low) & (listed.classes <= high)
                ours = _aggregate(listed.src[keep], listed.dst[keep], listed.weight[keep] * fractions[repetition], n)
                theirs = _aggregate(other.src, other.dst, np.full(other.src.size, explicit.chunk_fraction), n)
                if not (np.array_equal(ours[0], theirs[0]) and np.allclose(ours[1], theirs[1], rtol=rtol, atol=0)):
                    _fail(explicit, f"{where}: transfers differ from explicit step {index}")
                if step.pattern.multicast != other.multicast or step.circuit != other.circuit:
                    _fail(explicit, f"{where}: multicast flag or circuit differs from explicit step {index}")
            memory, flop, copied = _explicit_local_work(explicit, other)
            expected = (sum((r.fan_in + 1) * r.fraction for r in step.reductions),
                        sum((r.fan_in - 1) * r.fraction for r in step.reductions), step.copy_fraction)
            if not np.allclose((memory, flop, copied), expected, rtol=rtol, atol=1e-15):
                _fail(explicit, f"{where}: local work {expected} differs from explicit step {index}'s "
                                f"{(memory, flop, copied)}")
    index, other = next(steps, (None, None))
    if other is not None:
        _fail(explicit, f"the explicit view has extra steps from step {index} on")


def fabric_for(algorithm, op: CollectiveOp, group_size: int):
    """A fabric to verify `algorithm` on: its own `verification_fabric`, else the first registered
    fabric (built with its defaults, in name order) that is large enough and that it supports.
    None when there is none."""
    from ddlsim.core.registry import FABRICS

    own = algorithm.verification_fabric(group_size)
    if own is not None and algorithm.supports(own, op, group_size) is None:
        return own
    for fabric in _default_fabrics(tuple(FABRICS.names())):
        if fabric.num_nodes >= group_size and algorithm.supports(fabric, op, group_size) is None:
            return fabric
    return None


def _default_fabrics(names: tuple[str, ...]) -> list:
    from ddlsim.core.caches import PROCESS_CACHES
    from ddlsim.core.registry import FABRICS

    return PROCESS_CACHES.memo("network.default_fabrics").get_or_make(
        names, lambda: [FABRICS.make(name) for name in names])
