"""Training iterations on a fabric that reconfigures its circuits while the job runs.

TopoOpt's OCS-reconfig and SiP-ML baselines (Sec. 5.1, Figs. 11 and 17) change their circuits
during an iteration, so an iteration's time depends on when the fabric reconfigures relative to
the iteration's compute and communication, not on each collective alone. This module runs that
iteration; the network room prices what the circuits carry (`ddlsim.network.fabrics.topoopt.circuits`).

* OCS-reconfig: every `period_s` (50 ms) the unsatisfied demand is measured and Algorithm 5 picks
  new circuits; if they differ from the current ones, every flow pauses for the reconfiguration
  latency (10 ms for a 3D-MEMS OCS; 1 us to 10 ms in Fig. 17). A measurement that finds no demand
  (during compute) keeps the circuits: there is nothing to serve better.
* SiP-ML (`period_s` None): circuits are rebuilt whenever the demand changes, in rounds
  (`on_demand_rounds`), each paying the reconfiguration latency.

An iteration is the workload's program order as phases (`iteration_phases`): compute for some
seconds (the compute timer's prices, as `simulate_training` uses them), or communicate a
demand matrix between nodes (one collective call's transfers, `demand.call_pairs`) followed by
the call's off-circuit time (transfers inside a node, local reductions). Communication does not
overlap compute, as in the training room's default. Events are phase ends, drain ends,
measurement epochs and reconfiguration ends; time moves from one to the next.

    phases = iteration_phases(workload, pricer.compute, gpus_per_node=4, local_time_s=...)
    result = simulate_reconfiguring(phases, num_nodes=128, policy=ReconfigPolicy(4, 100e9, 10e-3))
    result.steady_iteration_s
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from ddlsim.core.errors import ConfigError
from ddlsim.core.types import CollectiveCall, ComputeEstimate
from ddlsim.core.work import ComputeTask, Workload
from ddlsim.network.fabrics.topoopt.circuits import (
    Circuits,
    ReconfigPolicy,
    on_demand_rounds,
    plan_circuits,
    same_shape,
)
from ddlsim.network.fabrics.topoopt.demand import call_pairs


@dataclass(frozen=True, eq=False)
class ReconfigPhase:
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
class ReconfigResult:
    iteration_times_s: tuple[float, ...]
    reconfigurations: int
    paused_s: float

    @property
    def steady_iteration_s(self) -> float:
        """Mean iteration time without the first iteration (which starts on pre-set circuits)."""
        times = self.iteration_times_s[1:] or self.iteration_times_s
        return float(np.mean(times))


class _Run:
    """The clock of a reconfiguring fabric: current circuits, pauses and measurement epochs."""

    def __init__(self, policy: ReconfigPolicy, num_nodes: int, first_demand: np.ndarray) -> None:
        self.policy = policy
        self.n = num_nodes
        self.t = 0.0
        self.pause_until = 0.0
        self.next_epoch = policy.period_s if policy.period_s is not None else math.inf
        self.reconfigurations = 0
        self.paused_s = 0.0
        self.circuits = Circuits(policy, plan_circuits(policy, first_demand))
        scale = float(first_demand.max())
        self._measured: np.ndarray | None = first_demand / scale if scale > 0 else first_demand

    def reconfigure(self, demand: np.ndarray, at: float) -> None:
        scale = float(demand.max())
        if scale == 0:
            return          # nothing measured: there is no demand to serve better, keep the circuits
        normalised = demand / scale
        if self._measured is not None and same_shape(normalised, self._measured):
            return          # the same demand up to a factor: Algorithm 5 would pick the same circuits
        self._measured = normalised
        links = plan_circuits(self.policy, demand)
        if np.array_equal(links, self.circuits.links):
            return
        self.circuits = Circuits(self.policy, links)
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
                self.t = min(self.pause_until, self.next_epoch)
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
        """Circuits rebuilt for every demand change: the network's rounds of Algorithm 5, in turn."""
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
        self.circuits = Circuits(self.policy, last)


def simulate_reconfiguring(phases: Sequence[ReconfigPhase], num_nodes: int, policy: ReconfigPolicy,
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


def iteration_phases(workload: Workload, compute_time: Callable[[ComputeTask], ComputeEstimate | float],
                     gpus_per_node: int = 1,
                     local_time_s: Callable[[CollectiveCall], float] | None = None) -> list[ReconfigPhase]:
    """One iteration of `workload` as phases, in program order, between nodes of `gpus_per_node` ranks.

    Compute tasks become compute phases (`compute_time` of one task, an estimate or seconds,
    times its count; adjacent ones merge); each collective call becomes the demand matrix of its
    transfers between nodes, followed by `local_time_s(call)` seconds of work the circuits do not
    see, if given. Calls are taken one at a time: their demand is what a reconfigurable fabric
    would measure while they run.
    """
    def seconds(task: ComputeTask) -> float:
        price = compute_time(task)
        return float(price) if isinstance(price, int | float) else price.time_s

    nodes = -(-workload.num_ranks // gpus_per_node)
    phases: list[ReconfigPhase] = []
    pending = 0.0
    for block in workload.blocks:
        for _ in range(block.repeat):
            for task in block.tasks:
                if isinstance(task, ComputeTask):
                    pending += seconds(task) * task.count
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
                        phases.append(ReconfigPhase(compute_s=pending))
                        pending = 0.0
                    phases.append(ReconfigPhase(demand=demand, name=task.name))
                    pending += local
    if pending:
        phases.append(ReconfigPhase(compute_s=pending))
    return phases
