"""Megatron-Core's interleaved schedule as its calls, for checking ddlsim's round-based model.

`megatron_program(stage, p, v, m)` follows ``forward_backward_pipelining_with_interleaving``
(megatron/core/pipeline_parallel/schedules.py) with ``overlap_p2p_comm`` False and the default
``microbatch_group_size_per_vp_stage`` = p, written from reading it: the schedule table, the
warm-up count, the three loops, and which of ``recv_prev`` / ``recv_next`` each p2p call sets
(``recv_tensor_from_previous_stage`` and the last-iteration rules). It knows nothing of slots or
rounds.

`simulate_program` times those calls: compute steps back to back, and each p2p call a blocking
batch whose sends are matched to the receiving stage's receives in FIFO order per directed link
(as NCCL matches them). A batch's sends start when its stage and the stages it sends to have all
reached their matching calls, and leave through the stage's one port (they end together, after
their summed time); a call ends when its sends and the batches sending to it have ended.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Call:
    """One p2p call: what it sends ("prev" with the backward step's (chunk, micro), "next" with the
    forward step's) and from which neighbours it receives."""

    sends: list[tuple[str, tuple[int, int]]]
    recvs: list[str]


def megatron_program(stage: int, p: int, v: int, m: int) -> list:
    total = m * v
    table = [(j, c) for first in range(0, m, p) for c in range(v) for j in range(first, min(first + p, m))]

    def chunk_id(k: int, forward: bool) -> int:
        c = table[k % total][1]
        return c if forward else v - 1 - c

    def recv_from_previous(k: int, forward: bool) -> bool:
        leading = stage == 0 if forward else stage == p - 1
        if not leading:
            return True
        last_chunk = v - 1 if forward else 0
        if k < p - 1:  # the ending stage has produced nothing yet
            return False
        return chunk_id(k - (p - 1), forward) != last_chunk

    def global_chunk(k: int, forward: bool) -> int:
        return chunk_id(k, forward) * p + stage

    warmup = min(2 * (p - stage - 1) + (v - 1) * p, total)
    all_warmup = warmup == total
    remaining = total - warmup
    last_chunk = p * v - 1
    program: list = []
    if stage > 0:
        program.append(Call([], ["prev"]))  # recv_forward for chunk 0
    for k in range(warmup):
        program.append(("F", global_chunk(k, True), table[k][0]))
        sends = [("next", (global_chunk(k, True), table[k][0]))] if global_chunk(k, True) != last_chunk else []
        recvs = ["prev"] if recv_from_previous(k, True) and k != total - 1 else []
        if k == warmup - 1 and not all_warmup and stage != p - 1:
            recvs.append("next")  # send_forward_backward_recv_forward_backward
        program.append(Call(sends, recvs))
    for k in range(remaining):
        fk = k + warmup
        program.append(("F", global_chunk(fk, True), table[fk][0]))
        program.append(("B", global_chunk(k, False), table[k][0]))
        sends = [("prev", (global_chunk(k, False), table[k][0]))] if global_chunk(k, False) != 0 else []
        if global_chunk(fk, True) != last_chunk:
            sends.append(("next", (global_chunk(fk, True), table[fk][0])))
        recvs = ["prev"] if recv_from_previous(fk, True) and k != remaining - 1 else []
        if recv_from_previous(k, False):
            recvs.append("next")
        program.append(Call(sends, recvs))
    if all_warmup and stage != p - 1:
        program.append(Call([], ["next"]))  # recv_backward
    for k in range(remaining, total):
        program.append(("B", global_chunk(k, False), table[k][0]))
        sends = [("prev", (global_chunk(k, False), table[k][0]))] if global_chunk(k, False) != 0 else []
        recvs = ["next"] if recv_from_previous(k, False) and k != total - 1 else []
        program.append(Call(sends, recvs))
    return program


def simulate_program(p: int, v: int, m: int, body: dict, send: dict) -> list[float]:
    """End of every stage's last call. `body[(kind, chunk)]`: a step's compute; `send[(kind, chunk)]`:
    its hand-over's transfer time (kind "F": the activation to chunk + 1, "B": the gradient to chunk - 1)."""
    programs = [megatron_program(s, p, v, m) for s in range(p)]
    position, clock = [0] * p, [0.0] * p
    queues: dict[tuple[int, int], list] = {}  # (sender, receiver) -> sends not yet matched
    arrived: dict[tuple[int, int], float] = {}  # (stage, call index) -> arrival
    send_end: dict[tuple[int, int, str], float] = {}  # (stage, call index, direction) -> end
    while any(position[s] < len(programs[s]) for s in range(p)):
        progressed = False
        for s in range(p):
            while position[s] < len(programs[s]):
                item = programs[s][position[s]]
                if isinstance(item, tuple):
                    clock[s] += body[(item[0], item[1])]
                    position[s] += 1
                    progressed = True
                    continue
                index = position[s]
                if (s, index) not in arrived:
                    arrived[(s, index)] = clock[s]
                    for direction, _ in item.sends:
                        _enqueue(queues.setdefault((s, (s + 1) % p if direction == "next" else (s - 1) % p), []),
                                 0, index)
                    for direction in item.recvs:
                        _enqueue(queues.setdefault(((s - 1) % p if direction == "prev" else (s + 1) % p, s), []),
                                 1, index)
                    progressed = True
                if not _try_finish(s, index, item, p, programs, queues, arrived, send_end, clock, send):
                    break
                position[s] += 1
                progressed = True
        assert progressed, "the Megatron program deadlocks"
    return clock


def _enqueue(link: list, side: int, index: int) -> None:
    """FIFO matching on a directed link: fill the oldest entry still missing this side, or open one."""
    for entry in link:
        if entry[side] is None:
            entry[side] = index
            return
    entry = [None, None]
    entry[side] = index
    link.append(entry)


def _match(queues, sender: int, receiver: int, sender_index: int | None, receiver_index: int | None):
    for entry in queues.get((sender, receiver), []):
        if (sender_index is not None and entry[0] == sender_index) or \
                (receiver_index is not None and entry[1] == receiver_index):
            return entry
    raise AssertionError("unmatched p2p call")


def _try_finish(s, index, call, p, programs, queues, arrived, send_end, clock, send) -> bool:
    """Place stage s's call `index` if every peer it talks to has reached its matching call."""
    start, duration = arrived[(s, index)], 0.0
    for direction, (chunk, _) in call.sends:
        peer = (s + 1) % p if direction == "next" else (s - 1) % p
        entry = _match(queues, s, peer, index, None)
        if entry[1] is None or (peer, entry[1]) not in arrived:
            return False
        start = max(start, arrived[(peer, entry[1])])
        duration += send[("F" if direction == "next" else "B", chunk)]
    for direction, _ in call.sends:
        send_end[(s, index, direction)] = start + duration
    end = start + duration
    for direction in call.recvs:
        peer = (s - 1) % p if direction == "prev" else (s + 1) % p
        entry = _match(queues, peer, s, None, index)
        if entry[0] is None or (peer, entry[0], "next" if direction == "prev" else "prev") not in send_end:
            return False
        end = max(end, send_end[(peer, entry[0], "next" if direction == "prev" else "prev")])
    clock[s] = end
    return True


def megatron_flags(stage: int, p: int, v: int, m: int) -> list[tuple[bool, bool, bool, bool]]:
    """(send_next, send_prev, recv_prev, recv_next) of every non-empty p2p call of `stage`."""
    flags = []
    for item in megatron_program(stage, p, v, m):
        if isinstance(item, Call) and (item.sends or item.recvs):
            directions = [direction for direction, _ in item.sends]
            flags.append(("next" in directions, "prev" in directions, "prev" in item.recvs, "next" in item.recvs))
    return flags


def megatron_order(stage: int, p: int, v: int, m: int) -> list[tuple[str, int, int]]:
    return [item for item in megatron_program(stage, p, v, m) if isinstance(item, tuple)]


__all__ = ["Call", "megatron_flags", "megatron_order", "megatron_program", "simulate_program"]
