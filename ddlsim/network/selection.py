"""How `best` orders and prunes its candidates before pricing them (the choice never changes).

A candidate's price is at least its **floor**: the local work of its whole schedule plus, for
every repetition of a step that moves data in a pattern without class windows, the fabric's
`min_latency_s` (every step with traffic pays at least one hop, the contract of
`Fabric.min_latency_s` that `ddlsim.network.bounds` rests on too). A candidate whose floor
exceeds the best price found so far cannot win and is not priced at all, nor is one whose floor
with its steps' (`StepPricer.step_floor_s`: the busiest node's bytes over its capacity for an
unwindowed step, the class floors for a windowed one) exceeds it; the others are priced
in the order of a rough guess of their price (the fabric's nominal alpha-beta per step), so that
the likely winner is priced first and the rest give up early. Pricing order does not change
the result: `best` keeps the smallest (price, name) over the candidates that could win.
"""

from __future__ import annotations

import numpy as np

from ddlsim.core.types import GroupLayout
from ddlsim.network.estimate import StepPricer, data_hops, schedule_compute_s
from ddlsim.network.placement import Placement
from ddlsim.network.reduction import ReductionModel
from ddlsim.network.schedule import Schedule


def latency_floor_s(schedule: Schedule, pricer: StepPricer) -> float:
    """The fabric's minimum latency times the repetitions of steps that surely carry traffic."""
    key = ("data hops", schedule)
    hops = pricer.memo.get(key)
    if hops is None:
        hops = pricer.memo.put(key, data_hops(schedule))
    return hops * pricer.fabric.min_latency_s()


def floor_s(schedule: Schedule, pricer: StepPricer, size_bytes: int, model: ReductionModel | None) -> float:
    """A lower bound on the price of `schedule` (module docstring)."""
    return schedule_compute_s(schedule, size_bytes, model) + latency_floor_s(schedule, pricer)


def rough_price_s(schedule: Schedule, pricer: StepPricer, layout: GroupLayout, placement: Placement,
                  size_bytes: int, floor: float) -> float:
    """A guess of the price from the fabric's nominal alpha-beta and the steps' latency floors
    (`StepPricer.step_floor_s`), for the pricing order only."""
    fabric = pricer.fabric
    alpha_s, beta_s_per_byte = fabric.nominal_alpha_beta()
    guess = floor
    for step in schedule.steps:
        if step.pattern is not None:
            busiest = pricer.sent_weight(step)
            guess += max(step.repeat * alpha_s, pricer.step_floor_s(step, layout, placement, size_bytes,
                                                                    node_bytes=False))
            guess += float(np.sum(step.fractions())) * size_bytes * busiest * beta_s_per_byte
    return guess
