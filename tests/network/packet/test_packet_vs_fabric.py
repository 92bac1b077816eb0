"""The packet model and the analytical fabric agree on fixed traffic patterns at full load.

The analytical fabric prices a pattern by its busiest transceiver (flows sharing it fairly); in
the packet model the same pattern, offered at full load, pushes one packet per slot through every
saturated transceiver. Each node always sends to the same destination, so there is no
head-of-line blocking and the two models must tell the same story.
"""

import numpy as np
import pytest

from ddlsim.core.types import GroupLayout
from ddlsim.network.api import make_fabric
from ddlsim.network.packet.opsquare_model import OpsquarePacketModel
from ddlsim.network.packet.run_config import PacketRunConfig
from ddlsim.network.packet.traffic import MappedTraffic
from ddlsim.network.patterns import Pairs
from ddlsim.network.placement import Placement

RUN = PacketRunConfig(load=1.0, locality=0.0, warmup_s=3e-6, measure_s=6e-6)


def both(destination, **shape):
    fabric = make_fabric("opsquare", **shape)
    n = fabric.num_nodes
    src = np.flatnonzero(destination != np.arange(n))
    cost = fabric.price(Pairs(n, src, destination[src]), GroupLayout(n), Placement(n))
    flows_on_busiest = cost.s_per_unit / (8 / fabric.params.channel_bps)
    packet = OpsquarePacketModel(fabric.params, RUN, traffic=MappedTraffic(destination, 1.0)).run()
    return flows_on_busiest, packet.throughput * n / src.size


def test_ring_shift_is_contention_free_in_both_models():
    flows, delivered = both(np.roll(np.arange(32), -1), num_pods=4, pod_size=8, num_groups=2)
    assert flows == pytest.approx(1.0)
    assert delivered == pytest.approx(1.0, abs=0.01)


def test_two_to_one_incast_halves_the_rate_in_both_models():
    # pods of one node: node 2k and 2k + 1 both send to node 2k + 2 (mod 16)
    destination = (np.arange(16) // 2 * 2 + 2) % 16
    flows, delivered = both(destination, num_pods=16, pod_size=1, num_groups=1)
    assert flows == pytest.approx(2.0)
    assert delivered == pytest.approx(1 / flows, abs=0.01)


def test_relay_fan_in_in_both_models():
    # every node of pod 0 sends to node 8 (pod 1, index 0): node 0 directly over the inter-pod
    # switch, nodes 1-7 through the relays 9-15, whose intra-pod transmitters converge on node 8's
    # receivers: channel 0 hears relays 9-11 (group 0), channel 1 hears relays 12-15 (group 1)
    destination = np.arange(32)
    destination[:8] = 8
    flows, delivered = both(destination, num_pods=4, pod_size=8, num_groups=2)
    assert flows == pytest.approx(4.0)  # the step lasts as long as 4 flows through one receiver
    # packet by packet, node 8's three receivers (inter-pod, channel 0, channel 1) are all busy:
    # 3 packets per slot for the 8 senders
    assert delivered == pytest.approx(3 / 8, abs=0.01)
