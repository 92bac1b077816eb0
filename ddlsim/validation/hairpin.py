"""A fabric whose paths cross one link twice: a router on a stick, for the SimGrid reference cases.

Two switches of `num_nodes / 2` ports each hang off one router by a single trunk each ("one-armed"
or "router on a stick": the trunk carries a routed frame in and back out). A flow between the two
halves goes from its port up the source switch's trunk, through the router, and down the
destination switch's trunk; a flow whose two ends sit behind one switch but on different VLANs
(here: one even and one odd port) is routed too, so it crosses its switch's trunk twice, in and
back out, each byte loading the trunk with 16 bits. Flows between two ports of the same VLAN stay
on their switch. The fluid engine and SimGrid (which lists the trunk twice in the route) must
agree on such paths; no other fabric of the suite has one.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from ddlsim.network.fabrics.ideal import IdealSwitch
from ddlsim.network.pricing import Routes


@dataclass(frozen=True)
class OneArmedRouter(IdealSwitch):
    """Ports of `bandwidth_bps`; two switches, each with one trunk of `trunk_bps` to the router."""

    trunk_bps: float = 200e9
    name: str = "one_armed_router"

    @cached_property
    def _capacity(self) -> np.ndarray:
        return np.concatenate([np.full(2 * self.num_nodes, self.bandwidth_bps), np.full(2, self.trunk_bps)])

    def route(self, src_nodes: np.ndarray, dst_nodes: np.ndarray, weights: np.ndarray) -> Routes:
        half = self.num_nodes // 2
        src_switch, dst_switch = src_nodes >= half, dst_nodes >= half
        routed = (src_switch != dst_switch) | (src_nodes % 2 != dst_nodes % 2)
        trunk = 2 * self.num_nodes
        up = np.where(routed, trunk + src_switch, -1)
        down = np.where(routed, trunk + dst_switch, -1)
        latency = np.where(routed, 2 * self.latency_s, self.latency_s)
        return Routes(latency, (src_nodes, up, down, self.num_nodes + dst_nodes), egress=(0,))
