"""A fat-tree with its physical uplinks declared (`uplinks_per_domain`): ECMP picks one per flow, so
flows of different sources can collide on one uplink, which a bundle per domain never shows."""

from __future__ import annotations

import dataclasses
import itertools

import numpy as np
import pytest

from ddlsim.app.catalog import load_all
from ddlsim.core.errors import ConfigError
from ddlsim.core.registry import FABRICS
from ddlsim.core.units import BITS_PER_BYTE
from ddlsim.network.contention.flows import run_flows
from ddlsim.network.fabrics.topoopt.shared_cluster import fat_tree_uplinks, shared_fat_tree
from ddlsim.validation.contention_suite import MB, collective

load_all()
NIC_BPS = 100e9


def _tree(uplinks: list[int], **extra):
    """16 single-GPU nodes, edge switches of 2, pods of 4: 2 uplinks per edge, 4 per pod (k = 4)."""
    return FABRICS.make("superpod", num_nodes=16, gpus_per_node=1, tier_sizes=[2, 4, 16],
                        tier_propagation=["0ns", "0ns", "0ns"], oversubscription=[1.0, 1.0], nic_bandwidth="100Gbps",
                        switch_latency="0ns", io_latency="0ns", node_propagation="0ns", cost_model="",
                        uplinks_per_domain=uplinks, **extra)


def _edge_uplink(fabric, src: int, dst: int) -> int:
    routes = fabric.route(np.array([src]), np.array([dst]), np.ones(1))
    return int(routes.hops[2][0])  # the first tier's uplink slot


def test_the_links_of_a_domain_add_up_to_its_bundle_and_every_link_is_used():
    bundled, ecmp = _tree([]), _tree([2, 4])
    assert bundled.capacity_bps().size == 4 * 16 + 2 * (8 + 4)
    assert ecmp.capacity_bps().size == 4 * 16 + 2 * (8 * 2 + 4 * 4)
    assert ecmp.capacity_bps()[4 * 16:].sum() == pytest.approx(bundled.capacity_bps()[4 * 16:].sum())
    pairs = np.array([(s, d) for s, d in itertools.product(range(16), repeat=2) if s // 4 != d // 4])
    routes = ecmp.route(pairs[:, 0], pairs[:, 1], np.ones(len(pairs)))
    for slot in range(2, 6):
        used = routes.hops[slot]
        assert (used >= 0).all()
    edge_up, pod_up, pod_down = routes.hops[2], routes.hops[4], routes.hops[5]
    assert np.unique(edge_up).size == 8 * 2 and np.unique(pod_up).size == 4 * 4  # ECMP reaches every uplink
    # The core switch a flow reaches sits above the aggregation switch it chose, down and up alike.
    offsets = ecmp._uplink_offsets
    assert ((pod_up - offsets[1]) % 4 // 2 == (edge_up - offsets[0]) % 2).all()
    assert ((pod_up - offsets[1]) % 4 == (pod_down - offsets[1] - 4 * 4) % 4).all()


def test_two_flows_hashed_onto_one_uplink_share_it_and_a_bundle_never_does():
    ecmp = _tree([2, 4])
    bundled = dataclasses.replace(ecmp, uplinks_per_domain=())
    candidates = [(s, d) for s in (0, 1) for d in range(4, 16)]
    links = {pair: _edge_uplink(ecmp, *pair) for pair in candidates}
    colliding = next((a, b) for a in candidates if a[0] == 0 for b in candidates
                     if b[0] == 1 and a[1] != b[1] and links[a] == links[b])
    apart = next((a, b) for a in candidates if a[0] == 0 for b in candidates
                 if b[0] == 1 and a[1] != b[1] and links[a] != links[b])
    alone_s = 64 * MB * BITS_PER_BYTE / NIC_BPS
    for (first, second), slowdown in ((colliding, 2.0), (apart, 1.0)):
        for fabric, expected in ((ecmp, slowdown), (bundled, 1.0)):
            jobs = [collective(fabric, "direct", "send_recv", list(pair), 64 * MB) for pair in (first, second)]
            for job in run_flows(fabric, jobs).jobs:
                assert job.isolated_s == pytest.approx(alone_s, rel=1e-9)
                assert job.duration_s == pytest.approx(expected * alone_s, rel=1e-9)


def test_the_ecmp_seed_moves_flows_and_the_hash_is_deterministic():
    pairs = np.array([(s, d) for s in range(4) for d in range(8, 16)])
    first = _tree([2, 4]).route(pairs[:, 0], pairs[:, 1], np.ones(len(pairs))).hops[2]
    again = _tree([2, 4]).route(pairs[:, 0], pairs[:, 1], np.ones(len(pairs))).hops[2]
    salted = _tree([2, 4], ecmp_seed=7).route(pairs[:, 0], pairs[:, 1], np.ones(len(pairs))).hops[2]
    assert (first == again).all() and (first != salted).any()


@pytest.mark.parametrize(("uplinks", "why"), [([2], "one count per tier"), ([2, 3], "multiple"), ([0, 4], ">= 1")])
def test_bad_uplink_counts_are_refused_in_one_line(uplinks, why):
    with pytest.raises(ConfigError, match=f"uplinks_per_domain = .*{why}") as error:
        _tree(uplinks)
    assert "\n" not in str(error.value)


def test_the_fig16_fat_trees_declare_one_link_per_aggregation_and_core_switch():
    assert fat_tree_uplinks(432) == [6, 36] and fat_tree_uplinks(432, 2.0) == [3, 36]  # k = 12
    for system, server_bps in (("topoopt_fat_tree", None), ("topoopt_fat_tree_oversub", 800e9)):
        fabric = shared_fat_tree(system, 432, 4, 8, 100e9)
        uplinks = np.unique(fabric.capacity_bps()[4 * fabric.num_nodes:])
        assert uplinks.size == 1 and uplinks[0] == pytest.approx(4 * fabric.nic_bandwidth_bps)  # a server's link
        if server_bps:
            assert uplinks[0] == pytest.approx(server_bps)
