"""Training iterations on a fabric that reconfigures its circuits while it runs.

This is the engine behind two of TopoOpt's section 5.1 baselines:

* OCS-reconfig: every `period` (50 ms) the unsatisfied demand is measured and Algorithm 5 picks new
  circuits; if they differ from the current ones, every flow pauses for the reconfiguration
  latency (10 ms for a 3D-MEMS OCS; swept from 1 us to 10 ms in Fig. 17). With host-based
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

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ddlsim.errors import ConfigError
from ddlsim.network.fabrics.topoopt.ocs_reconfig import ocs_reconfig
from ddlsim.network.fabrics.topoopt.topology import DirectTopology


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
        self.topology = DirectTopology.from_parts(links.shape[0], [_link_arrays(links)])

    def drain(self, remaining: np.ndarray) -> tuple[np.ndarray, float]:
        """(mask of the pairs that can move now, seconds for them to drain together)."""
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

    def _plan(self, demand: np.ndarray) -> np.ndarray:
        return ocs_reconfig(demand, self.policy.degree, discount=self.policy.discount,
                            forwarding=self.policy.forwarding)

    def reconfigure(self, demand: np.ndarray, at: float) -> None:
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
        on_demand = self.policy.period_s is None
        if on_demand:
            self.reconfigure(remaining, self.t)
        while remaining.sum() > 0:
            if self.t < self.pause_until:
                wake = min(self.pause_until, self.next_epoch)
                self.t = wake
                self.epochs_until(self.t, remaining)
                continue
            mask, seconds = self.circuits.drain(remaining)
            if math.isinf(seconds):
                if on_demand:
                    raise ConfigError("demand", "unroutable", "on-demand circuits cannot serve the remaining demand")
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
            if on_demand and remaining.sum() > 0:
                self.reconfigure(remaining, self.t)


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
