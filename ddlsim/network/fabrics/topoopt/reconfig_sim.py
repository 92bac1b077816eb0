"""Training iterations on a fabric that reconfigures its circuits while it runs.

This is the engine behind two of TopoOpt's section 5.1 baselines:

* OCS-reconfig: every `period` (50 ms) the unsatisfied demand is measured and Algorithm 5 picks new
  circuits; if they differ from the current ones, every flow pauses for the reconfiguration
  latency (10 ms for a 3D-MEMS OCS; swept from 1 us to 10 ms in Fig. 17). A measurement that
  finds no demand at all (during compute) keeps the circuits: there is nothing to serve better. With host-based
  forwarding (FW) the circuits are kept connected and all traffic is forwarded over them; without
  it (noFW) only pairs with a direct circuit make progress.
* SiP-ML: circuits are recomputed whenever the traffic demand changes (a communication phase
  starts, or the flows on the current circuits finish with demand left), with Algorithm 5 without
  discount, a 25 us reconfiguration and no forwarding (appendix F).

An iteration is a list of phases: compute for some seconds, or communicate a demand matrix. The
flow model is fluid: the flows that can move (all of them with FW, the directly connected ones
without) drain together, at the pace of the most loaded link (bytes on that link over its
bandwidth), exactly the transfer time the static fabrics charge for a step. Propagation (1 us per
hop) is neglected next to millisecond reconfigurations. Events are phase ends, drain ends,
measurement epochs and reconfiguration ends; time moves from one to the next, so a run costs a
few hundred Algorithm 5 calls, not a packet simulation.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from functools import cached_property

import numpy as np

from ddlsim.errors import ConfigError
from ddlsim.network.fabrics.topoopt.demand import call_pairs
from ddlsim.network.fabrics.topoopt.ocs_reconfig import ocs_reconfig
from ddlsim.network.fabrics.topoopt.topology import DirectTopology
from ddlsim.types import CollectiveCall, ComputeTask, Workload


@dataclass(frozen=True, eq=False)
class Phase:
    """Compute for `compute_s` seconds, or (when `demand` is given) move `demand[i, j]` bytes i -> j."""

    compute_s: float = 0.0
    demand: np.ndarray | None = None
    name: str = ""

    def __post_init__(self) -> None:
        if not (math.isfinite(self.compute_s) and self.compute_s >= 0):
            raise ConfigError("compute_s", self.compute_s, "must be finite and >= 0")
        if self.demand is not None:
            matrix = np.asarray(self.demand, dtype=float)
            if matrix.ndim != 2 or matrix.shape[0] != matrix.shape[1] or (matrix < 0).any():
                raise ConfigError("demand", matrix.shape, "must be a square matrix of non-negative bytes")
            object.__setattr__(self, "demand", matrix)


@dataclass(frozen=True)
class ReconfigPolicy:
    """How and when circuits change. `period_s` None means on every change of demand (SiP-ML)."""

    degree: int
    link_bandwidth_bps: float
    reconfiguration_s: float
    period_s: float | None = 0.05
    forwarding: bool = True
    discount: bool = True

    def __post_init__(self) -> None:
        if self.degree < 1:
            raise ConfigError("degree", self.degree, "must be >= 1")
        if not self.link_bandwidth_bps > 0:
            raise ConfigError("link_bandwidth_bps", self.link_bandwidth_bps, "must be > 0")
        if not self.reconfiguration_s >= 0:
            raise ConfigError("reconfiguration_s", self.reconfiguration_s, "must be >= 0")
        if self.period_s is not None and not self.period_s > 0:
            raise ConfigError("period_s", self.period_s, "must be > 0 (or None for on-demand)")


@dataclass(frozen=True)
class ReconfigResult:
    iteration_times_s: tuple[float, ...]
    reconfigurations: int
    paused_s: float

    @property
    def steady_iteration_s(self) -> float:
        """Mean iteration time without the first iteration (which starts on pre-set circuits)."""
        times = self.iteration_times_s[1:] or self.iteration_times_s
        return float(np.mean(times))


class _Circuits:
    """The current circuits and what they can carry."""

    def __init__(self, policy: ReconfigPolicy, links: np.ndarray) -> None:
        self.policy = policy
        self.links = links
        self._last: tuple[np.ndarray, float, np.ndarray, float] | None = None

    @cached_property
    def topology(self) -> DirectTopology:
        return DirectTopology.from_parts(self.links.shape[0], [_link_arrays(self.links)])

    def drain(self, remaining: np.ndarray) -> tuple[np.ndarray, float]:
        """(mask of the pairs that can move now, seconds for them to drain together).

        Flows drain in proportion, so the remaining demand is often the previous one scaled; the
        answer then scales too and the routing is not redone.
        """
        scale = float(remaining.max())
        if self._last is not None and scale > 0:
            shape, last_scale, mask, seconds = self._last
            if _same_shape(remaining / scale, shape):
                return mask, seconds * scale / last_scale
        mask, seconds = self._drain(remaining)
        if scale > 0:
            self._last = (remaining / scale, scale, mask, seconds)
        return mask, seconds

    def _drain(self, remaining: np.ndarray) -> tuple[np.ndarray, float]:
        src, dst = np.nonzero(remaining)
        reach = self.topology.reachable_distance if self.policy.forwarding else self.links
        movable = reach[src, dst] > 0
        mask = np.zeros_like(remaining, dtype=bool)
        mask[src[movable], dst[movable]] = True
        if not movable.any():
            return mask, math.inf
        sizes = remaining[src[movable], dst[movable]]
        if self.policy.forwarding:
            loads = self.topology.link_loads(src[movable], dst[movable], sizes)
            seconds = loads.max() * 8 / self.policy.link_bandwidth_bps
        else:
            per_pair = sizes / self.links[src[movable], dst[movable]]
            seconds = per_pair.max() * 8 / self.policy.link_bandwidth_bps
        return mask, float(seconds)


def _same_shape(normalised: np.ndarray, previous: np.ndarray) -> bool:
    """True when two demands normalised by their maximum are equal up to float rounding."""
    return normalised.shape == previous.shape and np.allclose(normalised, previous, rtol=1e-9, atol=1e-12)


def _link_arrays(links: np.ndarray) -> tuple[np.ndarray, np.ndarray, str]:
    src, dst = np.nonzero(links)
    counts = links[src, dst]
    return np.repeat(src, counts), np.repeat(dst, counts), "circuit"


class _Run:
    def __init__(self, policy: ReconfigPolicy, num_nodes: int, first_demand: np.ndarray) -> None:
        self.policy = policy
        self.n = num_nodes
        self.t = 0.0
        self.pause_until = 0.0
        self.next_epoch = policy.period_s if policy.period_s is not None else math.inf
        self.reconfigurations = 0
        self.paused_s = 0.0
        self.circuits = _Circuits(policy, self._plan(first_demand))
        scale = float(first_demand.max())
        self._measured: np.ndarray | None = first_demand / scale if scale > 0 else first_demand

    def _plan(self, demand: np.ndarray) -> np.ndarray:
        return ocs_reconfig(demand, self.policy.degree, discount=self.policy.discount,
                            forwarding=self.policy.forwarding)

    def reconfigure(self, demand: np.ndarray, at: float) -> None:
        scale = float(demand.max())
        if scale == 0:
            return          # nothing measured: there is no demand to serve better, keep the circuits
        normalised = demand / scale
        if self._measured is not None and _same_shape(normalised, self._measured):
            return          # the same demand up to a factor: Algorithm 5 would pick the same circuits
        self._measured = normalised
        links = self._plan(demand)
        if np.array_equal(links, self.circuits.links):
            return
        self.circuits = _Circuits(self.policy, links)
        start = max(at, self.pause_until)
        self.pause_until = start + self.policy.reconfiguration_s
        self.paused_s += self.policy.reconfiguration_s
        self.reconfigurations += 1

    def epochs_until(self, end: float, demand: np.ndarray) -> None:
        while self.next_epoch <= end:
            self.reconfigure(demand, self.next_epoch)
            self.next_epoch += self.policy.period_s  # type: ignore[operator]

    def compute(self, seconds: float) -> None:
        end = self.t + seconds
        self.epochs_until(end, np.zeros((self.n, self.n)))
        self.t = end

    def communicate(self, demand: np.ndarray) -> None:
        remaining = demand.copy()
        np.fill_diagonal(remaining, 0.0)
        if self.policy.period_s is None:
            self._on_demand(remaining)
            return
        while remaining.sum() > 0:
            if self.t < self.pause_until:
                wake = min(self.pause_until, self.next_epoch)
                self.t = wake
                self.epochs_until(self.t, remaining)
                continue
            mask, seconds = self.circuits.drain(remaining)
            if math.isinf(seconds):
                self.t = self.next_epoch
                self.epochs_until(self.t, remaining)
                continue
            finish = self.t + seconds
            if finish > self.next_epoch:
                done = (self.next_epoch - self.t) / seconds
                remaining[mask] *= 1.0 - done
                self.t = self.next_epoch
                self.epochs_until(self.t, remaining)
                continue
            remaining[mask] = 0.0
            self.t = finish

    def _on_demand(self, demand: np.ndarray) -> None:
        """Circuits rebuilt for every demand change: rounds of Algorithm 5, each drained in turn.

        The rounds depend only on the demand's shape, and their drain times scale with its size
        and with 1 / bandwidth, so they are computed once per shape (`on_demand_rounds`) and reused.
        """
        scale = float(demand.max())
        if scale == 0:
            return
        first, units, later, last = on_demand_rounds(self.policy, demand / scale)
        if not np.array_equal(first, self.circuits.links):
            later += 1
        self.t = max(self.t, self.pause_until) + later * self.policy.reconfiguration_s
        self.t += units * scale / self.policy.link_bandwidth_bps
        self.pause_until = self.t
        self.paused_s += later * self.policy.reconfiguration_s
        self.reconfigurations += later
        self.circuits = _Circuits(self.policy, last)


_ROUNDS: dict[tuple, tuple[np.ndarray, float, int, np.ndarray]] = {}


def on_demand_rounds(policy: ReconfigPolicy, shape: np.ndarray) -> tuple[np.ndarray, float, int, np.ndarray]:
    """(first circuits, drain seconds at 1 bit/s, reconfigurations after the first, last circuits)
    of an on-demand phase whose demand, normalised to a maximum of 1, is `shape`."""
    digest = hashlib.blake2b(np.ascontiguousarray(shape).tobytes(), digest_size=16).hexdigest()
    key = (policy.degree, policy.forwarding, policy.discount, shape.shape, digest)
    if key in _ROUNDS:
        return _ROUNDS[key]
    unit = replace(policy, link_bandwidth_bps=1.0)
    plan = lambda demand: ocs_reconfig(demand, unit.degree, discount=unit.discount,  # noqa: E731
                                       forwarding=unit.forwarding)
    remaining = shape.copy()
    circuits = _Circuits(unit, plan(remaining))
    first, seconds, later = circuits.links, 0.0, 0
    while remaining.sum() > 0:
        mask, drain = circuits.drain(remaining)
        if math.isinf(drain):
            raise ConfigError("demand", "unroutable", "on-demand circuits cannot serve the remaining demand")
        seconds += drain
        remaining[mask] = 0.0
        if remaining.sum() > 0:
            links = plan(remaining)
            if not np.array_equal(links, circuits.links):
                later += 1
                circuits = _Circuits(unit, links)
    if len(_ROUNDS) > 256:
        _ROUNDS.clear()
    _ROUNDS[key] = (first, seconds, later, circuits.links)
    return _ROUNDS[key]


def simulate_reconfigurable(phases: Sequence[Phase], num_nodes: int, policy: ReconfigPolicy,
                            iterations: int = 4) -> ReconfigResult:
    """Run `iterations` back-to-back iterations of `phases`; circuits start planned for the first demand."""
    if iterations < 1:
        raise ConfigError("iterations", iterations, "must be >= 1")
    demands = [p.demand for p in phases if p.demand is not None]
    for demand in demands:
        if demand.shape != (num_nodes, num_nodes):
            raise ConfigError("demand", demand.shape, f"must be {num_nodes} x {num_nodes}")
    run = _Run(policy, num_nodes, demands[0] if demands else np.zeros((num_nodes, num_nodes)))
    times = []
    for _ in range(iterations):
        start = run.t
        for phase in phases:
            if phase.compute_s:
                run.compute(phase.compute_s)
            if phase.demand is not None:
                run.communicate(phase.demand)
        times.append(run.t - start)
    return ReconfigResult(tuple(times), run.reconfigurations, run.paused_s)


def workload_phases(workload: Workload, compute_time_s: Callable[[ComputeTask], float],
                    gpus_per_node: int = 1,
                    local_time_s: Callable[[CollectiveCall], float] | None = None) -> list[Phase]:
    """One iteration of `workload` as phases, in execution order, between nodes of `gpus_per_node`.

    Compute tasks become compute phases (`compute_time_s` of one task, times its count; adjacent
    ones merge); each collective call becomes the demand matrix of its logical transfers between
    nodes (`demand.call_pairs`), followed by `local_time_s(call)` seconds of work the circuits do
    not see (transfers inside a node, local reductions), if given. Calls are taken one at a time:
    their demand is what a reconfigurable fabric would measure while they run.
    """
    nodes = -(-workload.num_ranks // gpus_per_node)
    phases: list[Phase] = []
    pending = 0.0
    for block in workload.blocks:
        for _ in range(block.repeat):
            for task in block.tasks:
                if isinstance(task, ComputeTask):
                    pending += compute_time_s(task) * task.count
                    continue
                src, dst, size = call_pairs(task)
                src, dst = src // gpus_per_node, dst // gpus_per_node
                keep = src != dst
                local = local_time_s(task) if local_time_s is not None else 0.0
                if not keep.any():
                    pending += local * task.count
                    continue
                demand = np.zeros((nodes, nodes))
                np.add.at(demand, (src[keep], dst[keep]), size[keep])
                for _ in range(task.count):
                    if pending:
                        phases.append(Phase(compute_s=pending))
                        pending = 0.0
                    phases.append(Phase(demand=demand, name=task.name))
                    pending += local
    if pending:
        phases.append(Phase(compute_s=pending))
    return phases
