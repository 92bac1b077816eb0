"""A SimPy environment advanced in slots, with batches of packets in flight between them.

A packet model does its per-slot work (traffic generation, contention resolution, link service)
for all nodes at once inside one SimPy process, the slot clock; batches of packets that reach a
queue later (after a switch, a forwarding delay or a fibre) are SimPy timeouts whose callbacks
enqueue them. This keeps the number of SimPy events to a few per slot instead of several per
packet, which is what makes a 1,024-node load sweep take minutes rather than hours.

Ordering within one slot is deterministic: a batch due at slot t was scheduled before the clock
yielded its timeout to slot t, so SimPy (which breaks ties by scheduling order) delivers it
first; the slot's own work therefore sees every packet that arrived by slot t.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import simpy


class SlottedEngine:
    def __init__(self, num_slots: int, step: Callable[[int], None]) -> None:
        self.num_slots = int(num_slots)
        self.env = simpy.Environment()
        self._step = step

    @property
    def now(self) -> int:
        return int(self.env.now)

    def after(self, delay_slots: int, callback: Callable[[int, Any], None], payload: Any) -> None:
        """Call `callback(slot, payload)` `delay_slots` (>= 1) slots from now."""
        if delay_slots < 1:
            raise ValueError(f"a batch in flight needs a delay of at least one slot, got {delay_slots}")
        event = self.env.timeout(int(delay_slots), value=payload)
        event.callbacks.append(lambda done: callback(int(self.env.now), done.value))

    def _clock(self):
        for slot in range(self.num_slots):
            self._step(slot)
            yield self.env.timeout(1)

    def run(self) -> None:
        self.env.process(self._clock())
        self.env.run(until=self.num_slots)
