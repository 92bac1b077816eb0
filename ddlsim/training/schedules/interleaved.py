"""The order of the interleaved 1F1B pipeline schedule as Megatron-Core runs it (Narayanan et al.
2021, Sec. 2.2.2; ``forward_backward_pipelining_with_interleaving`` in Megatron-Core's
``megatron/core/pipeline_parallel/schedules.py``, its sends and receives in ``p2p_communication.py``).

Chunks and order. With p stages and v virtual stages each stage runs v model chunks: chunk c
(0 .. p v - 1) holds layers c L / (p v) onward and runs on stage c mod p. Stage s runs N = m v
forward and N backward chunk steps, micro-batches taken in groups of p (Megatron-Core's default
``microbatch_group_size_per_vp_stage`` = p):

    forward step k  -> chunk ((k // p) mod v) p + s, micro-batch (k // (p v)) p + k mod p
    backward step k -> chunk (v - 1 - (k // p) mod v) p + s, the same micro-batch
    warm-up w_s = 2 (p - s - 1) + (v - 1) p forwards (at most N), then one forward and one
    backward at a time, then the remaining backwards.

m must be a multiple of p (Megatron-Core raises otherwise). With v = 1 Megatron runs its
non-interleaved schedule, and so does ddlsim (`one_f_one_b.py`).

Slots and exchanges. Number stage s's loop iterations as slots q = 0 .. N - 1 + w_s: slot q
runs F(q) if q < N, then B(q - w_s) if q >= w_s, then calls Megatron's p2p communicator once
(``send_forward_recv_forward`` in the warm-up, ``send_forward_backward_recv_forward_backward``
in the steady state, ``send_backward_recv_backward`` in the cool-down; slot -1 is the first
``recv_forward``). That exchange sends what the slot produced (F's output to the next stage
unless it is the last chunk, B's input gradient to the previous stage unless it is chunk 0) and
receives what slot q + 1 needs (its forward's input unless chunk 0, its backward's output
gradient unless the last chunk); stage p - 1's next stage is stage 0. A stage whose warm-up
holds all its forwards (w_s >= N) receives its first output gradient in a call of its own
(``recv_backward``), after its last forward exchange; where w_s = N that falls in the same slot
(`separate_backward_receive`). Every tensor moves between neighbours whose exchanges fall in
the same round r = q + s (`exchange_flags`; the tests check the flags against Megatron-Core's
``recv_tensor_from_previous_stage``), so `exchanges.py` lays the iteration's graph out a round at
a time, and `rounds.py` and `overlapped.py` sum it up that way. How the exchanges block
(``training.overlap_p2p_comm``) is described there.
"""

from __future__ import annotations

from typing import Any

from ddlsim.core.errors import ConfigError
from ddlsim.training.schedules.one_f_one_b import Action, one_f_one_b_order
from ddlsim.workload.transformer.memory import interleaved_warmup

# The helpers below take ints or numpy arrays alike (the round engine passes arrays of stages).


warmup_steps = interleaved_warmup  # Megatron's warm-up forwards of a stage, before clipping to m v


def step_chunk(step: Any, stage: Any, stages: int, virtual: int, forward: bool) -> Any:
    """The model chunk of `stage`'s forward (or backward) step `step`."""
    group = (step // stages) % virtual
    return (group if forward else virtual - 1 - group) * stages + stage


def step_micro_batch(step: Any, stages: int, virtual: int) -> Any:
    return (step // (stages * virtual)) * stages + step % stages


def exchange_flags(stage: Any, slot: Any, stages: int, virtual: int, micro: int) -> tuple[Any, Any, Any, Any]:
    """(send_next, send_prev, recv_prev, recv_next) of `stage`'s exchange after `slot`."""
    n, last = micro * virtual, stages * virtual - 1
    back = slot - warmup_steps(stage, stages, virtual)
    send_next = (slot >= 0) & (slot < n) & (step_chunk(slot, stage, stages, virtual, True) != last)
    send_prev = (back >= 0) & (back < n) & (step_chunk(back, stage, stages, virtual, False) != 0)
    recv_prev = (slot + 1 >= 0) & (slot + 1 < n) & (step_chunk(slot + 1, stage, stages, virtual, True) != 0)
    recv_next = (back + 1 >= 0) & (back + 1 < n) & (step_chunk(back + 1, stage, stages, virtual, False) != last)
    return send_next, send_prev, recv_prev, recv_next


def separate_backward_receive(stage: Any, slot: Any, stages: int, virtual: int, micro: int) -> Any:
    """True where the slot's exchange is two calls: the forward one, then ``recv_backward``
    (the stage's warm-up is exactly its m v forwards and this is the last of them)."""
    n = micro * virtual
    return (warmup_steps(stage, stages, virtual) == n) & (slot == n - 1)


def check_micro_batches(stages: int, micro: int) -> None:
    if micro % stages:
        raise ConfigError("micro_batches", micro, f"must be a multiple of the {stages} pipeline stages for the "
                                                  "interleaved schedule")


def slot_actions(stage: int, slot: int, stages: int, virtual: int, micro: int) -> list[Action]:
    """What `stage` computes in `slot`: its forward step, then its backward step, where they exist."""
    n, back = micro * virtual, slot - warmup_steps(stage, stages, virtual)
    actions: list[Action] = []
    if 0 <= slot < n:
        actions.append(("F", step_chunk(slot, stage, stages, virtual, True), step_micro_batch(slot, stages, virtual)))
    if 0 <= back < n:
        actions.append(("B", step_chunk(back, stage, stages, virtual, False), step_micro_batch(back, stages, virtual)))
    return actions


def last_slot(stage: int, stages: int, virtual: int, micro: int) -> int:
    return micro * virtual - 1 + warmup_steps(stage, stages, virtual)


def interleaved_order(stage: int, stages: int, chunks_per_stage: int, micro: int) -> list[Action]:
    """The actions of `stage` in interleaved 1F1B order: ("F" or "B", model chunk, micro-batch)."""
    p, v, m = stages, chunks_per_stage, micro
    if v == 1:
        return [(kind, stage, j) for kind, j in one_f_one_b_order(stage, p, m)]
    check_micro_batches(p, m)
    return [action for slot in range(last_slot(stage, p, v, m) + 1) for action in slot_actions(stage, slot, p, v, m)]

