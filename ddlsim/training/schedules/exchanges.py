"""The interleaved 1F1B iteration graph, with Megatron-Core's stage-to-stage exchanges.

`interleaved.py` numbers every stage's loop iterations as slots and shows that every tensor a
stage sends after slot q reaches a neighbour whose exchange falls in the same round r = q + s.
This module lays the graph out a round at a time. A chunk step is its per-micro-batch blocks
without its hand-over (`stages.is_handover`: the ``pipeline_send_*`` blocks, one send per
chunk boundary, micro-batch and direction, each of the full activation or, with scatter-gather,
of 1/TP of it; the receiving chunk's scatter-gather all-gather stays in its step). The
hand-overs are issued in the exchanges, as ``training.overlap_p2p_comm`` says:

False (Megatron-Core's default, with ``batch_p2p_comm``): after each slot the stage calls one
blocking ``batch_isend_irecv``. Its sends start when the stage and the stages it sends to have
all reached their exchange (NCCL sends wait for the matching receive) and leave through the
stage's one port, on its stream, one after the other (so both end after their summed time;
each receiver waits for the whole batch); the stage's next op waits until its sends and
everything sent to it have ended. A hand-over without a send task takes no time but still waits
for both sides. So a forward output leaves only after the slot's backward too, and every stage
runs in lock-step with both neighbours.

True (Megatron-LM's training default): warm-up and cool-down exchanges block as above (one
transfer each way at most). In the steady state a stage posts the send and the next receive
right after each forward and each backward step (``isend``/``irecv``); a transfer runs on its
sender's ``stage<s>_p2p`` stream once both sides have posted, a received tensor is waited for
only by the step that uses it, and a send one slot later (Megatron waits for the previous send
handle after posting the next). Blocking transfers run on that stream too; the stage waits.

The graph has O(p v m) ops, as the interleaved steps alone do.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ddlsim.core.work import Workload
from ddlsim.training.graph import IterationGraph
from ddlsim.training.pricing import Pricer
from ddlsim.training.schedules.interleaved import (
    check_micro_batches,
    exchange_flags,
    last_slot,
    separate_backward_receive,
    slot_actions,
    step_chunk,
    step_micro_batch,
    warmup_steps,
)
from ddlsim.training.schedules.plan import micro_batches, pipeline_stages, virtual_stages
from ddlsim.training.schedules.stages import StageBuilder, add_tail, is_handover, split_steps, stream_of
from ddlsim.training.settings import TrainingSettings

Deps = tuple[int, ...]


@dataclass
class _Stage:
    """What a stage's next ops wait for."""

    pending: Deps = ()  # the next op on the stage's stream
    recv: dict[str, Deps] = field(default_factory=dict)  # "F"/"B": posted receive the next such step waits for
    sent: dict[str, Deps] = field(default_factory=dict)  # "F"/"B": posted send waited for one slot later


class _Layout:
    """The graph being built: each step's body and hand-over blocks, and every stage's waits."""

    def __init__(self, workload: Workload, pricer: Pricer, settings: TrainingSettings) -> None:
        steps = split_steps(workload)
        self.body = {"F": tuple(b for b in steps.forward if not is_handover(b)),
                     "B": tuple(b for b in steps.backward if not is_handover(b))}
        self.handover = {"F": tuple(b for b in steps.forward if is_handover(b)),
                         "B": tuple(b for b in steps.backward if is_handover(b))}
        self.tail = steps.tail
        self.builder = StageBuilder(workload, pricer, settings)
        self.p, self.v, self.m = pipeline_stages(workload), virtual_stages(workload), micro_batches(workload)
        check_micro_batches(self.p, self.m)
        self.dp_overlap = settings.overlap.buckets
        self.state = [_Stage() for _ in range(self.p)]
        self.last_backward: dict[int, list[int]] = {}

    def active(self, stage: int, slot: int) -> bool:
        return -1 <= slot <= last_slot(stage, self.p, self.v, self.m)

    def frontier(self, stage: int) -> Deps:
        last = self.builder.last.get(stream_of(stage))
        return self.state[stage].pending + ((last,) if last is not None else ())

    def compute(self, stage: int, kind: str, chunk: int, micro: int) -> None:
        """Add the body of `stage`'s step (after what it waits for, a posted receive included)."""
        state = self.state[stage]
        expand = self.dp_overlap and kind == "B" and micro == self.m - 1
        deps = state.pending + state.recv.pop(kind, ())
        last, backward = self.builder.step(self.body[kind], stage, f"{kind}{micro}c{chunk}", deps, expand, chunk)
        state.pending = deps if last is None else ()
        if expand:
            self.last_backward.setdefault(stage, []).extend(backward)

    def transfer(self, stage: int, kind: str, chunk: int, micro: int, deps: Deps, stream: str | None = None) -> Deps:
        """Add `stage`'s hand-over of `kind` after `deps`; return what its receiver waits for.

        On the stage's own stream (blocking) a hand-over without a send task is a send of no
        duration: the stream waits for `deps` all the same. On the p2p stream it is `deps`.
        """
        state = self.state[stage]
        if stream is None:
            deps = state.pending + deps
        last, _ = self.builder.step(self.handover[kind], stage, f"{kind}{micro}c{chunk}", deps, chunk=chunk,
                                    stream=stream)
        if stream is not None:
            return deps if last is None else (last,)
        state.pending = tuple(dict.fromkeys(deps)) if last is None else ()
        return self.frontier(stage)

    def finish(self) -> IterationGraph:
        side = self.builder.side_waits()
        waiting = {stage: state.pending + state.sent.pop("B", ()) + side[stage]
                   for stage, state in enumerate(self.state)}
        add_tail(self.builder, self.tail, self.last_backward, self.dp_overlap, waiting)
        return self.builder.graph


def interleaved_graph(workload: Workload, pricer: Pricer, settings: TrainingSettings) -> IterationGraph:
    layout = _Layout(workload, pricer, settings)
    rounds = last_slot(0, layout.p, layout.v, layout.m) + 1
    run = _overlapped_round if settings.overlap_p2p_comm else _blocking_round
    for round_index in range(rounds):
        run(layout, round_index)
    return layout.finish()


def _flags(layout: _Layout, stage: int, slot: int) -> tuple[bool, bool, bool, bool]:
    return tuple(bool(flag) for flag in exchange_flags(stage, slot, layout.p, layout.v, layout.m))  # type: ignore


def _chunk_micro(layout: _Layout, stage: int, slot: int, kind: str) -> tuple[int, int]:
    step = slot if kind == "F" else slot - warmup_steps(stage, layout.p, layout.v)
    return step_chunk(step, stage, layout.p, layout.v, kind == "F"), step_micro_batch(step, layout.p, layout.v)


def _blocking_round(layout: _Layout, round_index: int) -> None:
    p = layout.p
    slots = {s: round_index - s for s in range(p) if layout.active(s, round_index - s)}
    for stage, slot in slots.items():
        for kind, chunk, micro in slot_actions(stage, slot, p, layout.v, layout.m):
            layout.compute(stage, kind, chunk, micro)
    frontier = {stage: layout.frontier(stage) for stage in slots}
    handed: dict[int, Deps] = {}  # receiver -> the batches it waits for
    for stage, slot in slots.items():  # a stage's recv_backward call of its own follows a lower stage's batch
        send_next, send_prev, _, _ = _flags(layout, stage, slot)
        prev, nxt = (stage - 1) % p, (stage + 1) % p
        posted: Deps = ()
        if send_prev:
            posted = frontier[prev]
            if separate_backward_receive(prev, slots[prev], p, layout.v, layout.m):
                posted = layout.frontier(prev) + handed.get(prev, ())
        if send_next:
            posted += frontier[nxt]
        for kind, sends in (("B", send_prev), ("F", send_next)):
            if sends:
                layout.transfer(stage, kind, *_chunk_micro(layout, stage, slot, kind), posted)
                posted = ()
        done = layout.frontier(stage)
        for peer, sends in ((prev, send_prev), (nxt, send_next)):
            if sends:
                handed[peer] = handed.get(peer, ()) + done
    for receiver, deps in handed.items():
        layout.state[receiver].pending = tuple(dict.fromkeys(layout.state[receiver].pending + deps))


def _overlapped_round(layout: _Layout, round_index: int) -> None:
    p, v, m = layout.p, layout.v, layout.m
    slots = {s: round_index - s for s in range(p) if layout.active(s, round_index - s)}
    kinds = {stage: {kind for kind, _, _ in slot_actions(stage, slot, p, v, m)} for stage, slot in slots.items()}
    flags = {stage: _flags(layout, stage, slot) for stage, slot in slots.items()}
    steady = {stage for stage in slots if kinds[stage] == {"F", "B"}}
    for half, kind, direction in ((0, "F", 1), (1, "B", -1)):
        for stage, slot in slots.items():
            if kind in kinds[stage]:
                layout.compute(stage, kind, *_chunk_micro(layout, stage, slot, kind))
        posted = {stage: layout.frontier(stage) for stage in slots}
        for stage, slot in slots.items():
            mine = layout.state[stage]
            done: Deps | None = None
            if flags[stage][half]:  # send_next after F, send_prev after B
                peer = (stage + direction) % p
                done = layout.transfer(stage, kind, *_chunk_micro(layout, stage, slot, kind),
                                       posted[stage] + posted[peer], f"{stream_of(stage)}_p2p")
                receiver_async = peer in steady or (kind == "B" and kinds[peer] == {"F"} and
                                                    slots[peer] == warmup_steps(peer, p, v) - 1 < m * v - 1)
                if receiver_async:
                    layout.state[peer].recv[kind] = done
                else:
                    layout.state[peer].pending += done
            if stage in steady:  # posted; the previous send of this kind is waited for now
                mine.pending += mine.sent.pop(kind, ())
                if done is not None:
                    mine.sent[kind] = done
            elif done is not None:
                mine.pending += done
