"""Circuits that a reconfigurable fabric sets up, and what they carry: network-only pricing.

TopoOpt's OCS-reconfig and SiP-ML baselines (Sec. 5.1, App. E.4 and F) choose d circuits per node
with Algorithm 5 for the demand they measure (`plan_circuits`). This module prices what the
circuits do with a demand matrix:

* `Circuits.drain`: which pairs can move now (all of them with host forwarding, the directly
  connected ones without) and how long they need to drain together, at the pace of the most
  loaded link (bytes on that link over its bandwidth), the transfer time the static fabrics
  charge for a step; propagation (1 us per hop) is neglected next to millisecond reconfigurations;
* `on_demand_rounds`: SiP-ML's circuits rebuilt for every change of demand, as rounds of
  Algorithm 5 drained in turn.

When to reconfigure within a training iteration (OCS-reconfig's 50 ms measurement epochs, the
pauses, the compute phases in between) is the training room's business:
`ddlsim.training.reconfiguration` runs the iteration and asks this module for prices.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, replace
from functools import cached_property

import numpy as np

from ddlsim.core.caches import PROCESS_CACHES
from ddlsim.core.errors import ConfigError
from ddlsim.network.fabrics.topoopt.ocs_reconfig import ocs_reconfig
from ddlsim.network.fabrics.topoopt.topology import DirectTopology


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


class Circuits:
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
            if same_shape(remaining / scale, shape):
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


def plan_circuits(policy: ReconfigPolicy, demand: np.ndarray) -> np.ndarray:
    """The circuits (links per node pair) Algorithm 5 picks for `demand` under `policy`."""
    return ocs_reconfig(demand, policy.degree, discount=policy.discount, forwarding=policy.forwarding)


def same_shape(normalised: np.ndarray, previous: np.ndarray) -> bool:
    """True when two demands normalised by their maximum are equal up to float rounding."""
    return normalised.shape == previous.shape and np.allclose(normalised, previous, rtol=1e-9, atol=1e-12)


def _link_arrays(links: np.ndarray) -> tuple[np.ndarray, np.ndarray, str]:
    src, dst = np.nonzero(links)
    counts = links[src, dst]
    return np.repeat(src, counts), np.repeat(dst, counts), "circuit"


_ROUNDS = PROCESS_CACHES.memo("network.topoopt_rounds", maxsize=256)


def on_demand_rounds(policy: ReconfigPolicy, shape: np.ndarray) -> tuple[np.ndarray, float, int, np.ndarray]:
    """(first circuits, drain seconds at 1 bit/s, reconfigurations after the first, last circuits)
    of an on-demand phase whose demand, normalised to a maximum of 1, is `shape`."""
    digest = hashlib.blake2b(np.ascontiguousarray(shape).tobytes(), digest_size=16).hexdigest()
    key = (policy.degree, policy.forwarding, policy.discount, shape.shape, digest)
    cached = _ROUNDS.get(key)
    if cached is not None:
        return cached
    unit = replace(policy, link_bandwidth_bps=1.0)
    plan = lambda demand: plan_circuits(unit, demand)  # noqa: E731
    remaining = shape.copy()
    circuits = Circuits(unit, plan(remaining))
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
                circuits = Circuits(unit, links)
    return _ROUNDS.put(key, (first, seconds, later, circuits.links))
