"""Collectives given as phases (`step_loads.CallPhases`) run at once on a fabric's links: each
starts at its own time, goes through its phases (a delay, then a transfer shared flow by flow),
and ends after its last. The iteration engine (`ddlsim.training.contended`) does the same between
its dependencies; this is the bare form, for checks against the flow-level engine.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ddlsim.network.contention.fluid import FluidNetwork
from ddlsim.network.contention.step_loads import CallPhases, submit_transfer


@dataclass(frozen=True)
class PhasedCall:
    """One collective's phases, `scale` times their own times, starting at `start_s`."""

    phases: CallPhases
    start_s: float = 0.0
    scale: float = 1.0


def run_phased(capacity_bps: np.ndarray, calls: Sequence[PhasedCall]) -> list[float]:
    """The end of every call when all run at once on links of `capacity_bps`."""
    network = FluidNetwork(np.asarray(capacity_bps, dtype=np.float64))
    ends = [float(call.start_s) for call in calls]
    following = [0] * len(calls)

    def proceed(index: int, now: float) -> None:
        call = calls[index]
        phases = call.phases.phases
        delay_s = 0.0
        while following[index] < len(phases):
            phase = phases[following[index]]
            following[index] += 1
            delay_s += phase.delay_s * call.scale
            if phase.loads_links:
                submit_transfer(network, index, phase, call.scale, now + delay_s)
                return
            delay_s += phase.transfer_s * call.scale
        ends[index] = now + delay_s

    for index, call in enumerate(calls):
        proceed(index, float(call.start_s))
    while network.busy():
        for index, time in network.advance():
            proceed(index, time)
    return ends
