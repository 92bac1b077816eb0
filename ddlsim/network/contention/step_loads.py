"""Per-step loads on the fabric's own links: what each priced step of a collective's compact view
puts on which link (or circuit, wavelength, transceiver), for the iteration's contention engine.

A collective becomes a sequence of `LinkPhase`s, one per compact step (or per run of repetitions
with the same window of pattern classes): a delay that uses no bandwidth (the step's head-to-head
latency and circuit setup over its repetitions), then a transfer that drains at the rate its flows
get. The transfer's loads are those `Fabric.route` gives for the step's flows in every group of the
layout at the call's placement (`Fabric.capacity_bps` numbers the links): on each link, the number
of flows crossing it, each flow counted in units of the step's heaviest flow, 8 bits per byte.
Sharing is then max-min fair per flow, as in the flow-level engine (`flows.py`): the fill of a
phase is the byte rate of one of its flows, so a direct all-to-all with n - 1 flows on a NIC takes
n - 1 shares of it against a ring's one. Alone, a phase's transfer takes exactly its priced time
(the rate is capped there), so an uncontended collective keeps its isolated price.

A mesh with more flows than `MAX_LISTED_FLOWS` (a direct exchange over thousands of ranks) is
listed by sampled shifts: it is the union of the permutations "every member sends to the member d
places after it in its block" for d = 1 .. b - 1. The near shifts (d and b - d up to a quarter of
the budget) are routed in full, the far ones evenly sampled, each sampled one weighted by the far
shifts it stands for. When a node's near neighbours (its server) lie within the near shifts,
every node's own links (NVLink, NIC) carry exactly their flows; links shared by many nodes (tier
uplinks) carry the sampled shifts' average. Any other step with more
flows than that carries no loads and runs at its own pace (docs/contention.md, limits).
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from ddlsim.core.types import GroupLayout
from ddlsim.core.units import BITS_PER_BYTE
from ddlsim.network.contention.fluid import FluidNetwork
from ddlsim.network.estimate import StepPricer
from ddlsim.network.fabrics.base import Fabric, expand_listed, listed_pairs_count
from ddlsim.network.patterns import Mesh, Pairs, Pattern
from ddlsim.network.placement import Placement
from ddlsim.network.schedule import CompactStep, Schedule

MAX_LISTED_FLOWS = 1 << 22
"""Steps with more flows than this over the whole layout carry no loads (not listed)."""

MAX_WINDOW_PHASES = 32
"""A windowed step with more runs of distinct windows than this is one phase with its whole pattern's loads."""

_EMPTY_IDS = np.zeros(0, dtype=np.int64)


@dataclass(frozen=True, eq=False)
class LinkPhase:
    """`delay_s` without bandwidth, then `transfer_s` (alone) putting `bits_per_byte[i]` bits on link
    `resources[i]` per byte one unit flow moves; `unit_s` is a unit flow's seconds per byte alone."""

    delay_s: float
    transfer_s: float
    resources: np.ndarray
    bits_per_byte: np.ndarray
    unit_s: float

    @property
    def loads_links(self) -> bool:
        return self.transfer_s > 0 and self.resources.size > 0 and self.unit_s > 0

    @cached_property
    def bits_per_second(self) -> np.ndarray:
        """Bits on each link per second of a transfer at its pace alone."""
        return self.bits_per_byte / self.unit_s


@dataclass(frozen=True, eq=False)
class CallPhases:
    """One call of a collective as phases (every group of its layout together)."""

    phases: tuple[LinkPhase, ...]

    @property
    def time_s(self) -> float:
        return float(sum(phase.delay_s + phase.transfer_s for phase in self.phases))


def pattern_loads(fabric: Fabric, pattern: Pattern, layout: GroupLayout, placement: Placement
                  ) -> tuple[np.ndarray, np.ndarray] | None:
    """(links, bits per byte of a unit flow) of `pattern` run by every group of `layout`, or None
    when it has too many flows to list."""
    unit = None
    if listed_pairs_count(pattern, layout) > MAX_LISTED_FLOWS:
        sampled = sampled_mesh(pattern, layout) if isinstance(pattern, Mesh) else None
        if sampled is None:
            return None
        pattern, unit = sampled
    src, dst, weight, _ = expand_listed(pattern, layout, placement)
    weight = np.asarray(weight, dtype=np.float64)
    if src.size == 0 or not np.any(weight > 0):
        return _EMPTY_IDS, np.zeros(0)
    unit = unit or float(weight.max())
    routes = fabric.route(src, dst, weight)
    multicast = pattern.multicast and fabric.supports_multicast()
    ids, amounts = [], []
    for slot, hop in enumerate(routes.hops):
        hop = np.broadcast_to(np.asarray(hop, dtype=np.int64), src.shape)
        used = hop >= 0
        slot_ids, slot_weights = hop[used], weight[used]
        if multicast and slot in routes.egress and slot_ids.size:
            slot_ids, slot_weights = _one_copy_per_source(slot_ids, src[used], slot_weights)
        ids.append(slot_ids)
        amounts.append(slot_weights)
    every = np.concatenate(ids) if ids else _EMPTY_IDS
    size = int(fabric.capacity_bps().size)
    loads = np.bincount(every, weights=np.concatenate(amounts) if amounts else None, minlength=size)
    if routes.fixed_loads is not None:
        loads = loads + np.asarray(routes.fixed_loads, dtype=np.float64)
    links = np.flatnonzero(loads > 0)
    return links, loads[links] * (BITS_PER_BYTE / unit)


def sampled_mesh(mesh: Mesh, layout: GroupLayout) -> tuple[Pairs, float] | None:
    """Some shifts of `mesh` (module docstring), each weighted by the shifts it stands for, and the
    weight of one real flow; None when its blocks differ in size."""
    sizes = mesh.block_sizes()
    sizes = sizes[sizes > 0]
    if sizes.size == 0 or np.any(sizes != sizes[0]) or sizes[0] < 2:
        return None
    size = int(sizes[0])
    members = np.flatnonzero(mesh.blocks >= 0)
    order = members[np.argsort(mesh.blocks[members], kind="stable")].reshape(-1, size)
    budget = max(2, min(size - 1, MAX_LISTED_FLOWS // max(1, order.size * layout.num_groups)))
    near = min((size - 1) // 2, budget // 4)
    far = np.arange(near + 1, size - near)
    picked = far[(np.arange(min(far.size, budget - 2 * near)) * far.size) // max(1, budget - 2 * near)]
    shifts = np.concatenate([np.arange(1, near + 1), np.arange(size - near, size), picked])
    stands_for = np.concatenate([np.ones(2 * near), np.full(picked.size, far.size / max(1, picked.size))])
    local = np.arange(size)
    src = np.concatenate([order.ravel() for _ in shifts])
    dst = np.concatenate([order[:, (local + shift) % size].ravel() for shift in shifts.tolist()])
    weight = np.repeat(stands_for * float(mesh.weight), order.size)
    pairs = Pairs(mesh.group_size, src, dst, weight, multicast=mesh.multicast,
                  key=("sampled", mesh.key, shifts.size), validate=False)
    return pairs, float(mesh.weight)


def _one_copy_per_source(ids: np.ndarray, sources: np.ndarray, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    width = int(sources.max()) + 1
    key, inverse = np.unique(ids * width + sources, return_inverse=True)
    best = np.zeros(key.size)
    np.maximum.at(best, inverse.ravel(), weights)
    return key // width, best


def _phase(fabric: Fabric, delay_s: float, transfer_s: float, loads: tuple[np.ndarray, np.ndarray] | None
           ) -> LinkPhase:
    if loads is None or loads[0].size == 0:
        return LinkPhase(delay_s, transfer_s, _EMPTY_IDS, np.zeros(0), 0.0)
    links, bits = loads
    unit_s = float(np.max(bits / fabric.capacity_bps()[links]))
    return LinkPhase(delay_s, transfer_s, links, bits, unit_s)


def call_phases(fabric: Fabric, schedule: Schedule, layout: GroupLayout, placement: Placement, size_bytes: int,
                pricer: StepPricer | None = None) -> CallPhases:
    """The phases of `schedule` for `size_bytes` on every group of `layout` at `placement`, each
    priced as `ddlsim.network.estimate.price_schedule` prices its step (local work left out)."""
    pricer = pricer or StepPricer(fabric)
    phases: list[LinkPhase] = []
    previous: Hashable = None
    for step in schedule.steps:
        if not step.is_communication:
            continue
        setup_s = fabric.setup_time_s(previous, step.circuit)
        if step.repeat > 1:
            setup_s += (step.repeat - 1) * fabric.setup_time_s(step.circuit, step.circuit)
        previous = step.circuit
        step_bytes = step.fractions() * size_bytes
        if step.windows is None:
            cost = pricer.cost(step.pattern, layout, placement)
            transfer_s = float(np.sum(fabric.transfer_time_s(step_bytes, cost.s_per_unit)))
            loads = pattern_loads(fabric, step.pattern, layout, placement)
            phases.append(_phase(fabric, cost.latency_s * step.repeat + setup_s, transfer_s, loads))
        else:
            phases += _windowed_phases(fabric, pricer, step, layout, placement, step_bytes, setup_s)
    return CallPhases(tuple(phases))


def _windowed_phases(fabric: Fabric, pricer: StepPricer, step: CompactStep, layout: GroupLayout,
                     placement: Placement, step_bytes: np.ndarray, setup_s: float) -> list[LinkPhase]:
    """One phase per run of repetitions with the same window of classes, or one for the whole step."""
    latency, s_per_unit = pricer.windowed(step, layout, placement)
    transfer = np.asarray(fabric.transfer_time_s(step_bytes, s_per_unit), dtype=np.float64)
    low, high = (np.broadcast_to(np.asarray(bound, dtype=np.int64), (step.repeat,)) for bound in step.windows)
    change = np.flatnonzero((np.diff(low) != 0) | (np.diff(high) != 0)) + 1
    starts = np.concatenate([[0], change])
    ends = np.concatenate([change, [step.repeat]])
    share_s = setup_s / step.repeat
    if starts.size > MAX_WINDOW_PHASES or not isinstance(step.pattern, Pairs):
        loads = pattern_loads(fabric, step.pattern, layout, placement)
        return [_phase(fabric, float(np.sum(latency)) + setup_s, float(np.sum(transfer)), loads)]
    phases = []
    for first, stop in zip(starts.tolist(), ends.tolist()):
        part = step.pattern.select(int(low[first]), int(high[first]))
        loads = pattern_loads(fabric, part, layout, placement)
        phases.append(_phase(fabric, float(np.sum(latency[first:stop])) + share_s * (stop - first),
                             float(np.sum(transfer[first:stop])), loads))
    return phases


def submit_transfer(network: FluidNetwork, key: Hashable, phase: LinkPhase, scale: float, start_s: float) -> None:
    """Submit `phase`'s transfer, `scale` times its own (a call standing for several, or priced a
    little differently), to start at `start_s`: work in seconds alone, a unit flow's byte rate as
    the fill (per-flow fairness), capped at its rate alone."""
    network.submit(key, phase.transfer_s * scale, phase.resources, phase.bits_per_second,
                   start_s=start_s, weight=phase.unit_s, max_fill=1.0 / phase.unit_s, share_key=phase)
