"""The ocs_reconfig and sipml fabrics: circuits chosen by Algorithm 5 for every step."""

from __future__ import annotations

import numpy as np
import pytest

from ddlsim.core.types import GroupLayout
from ddlsim.network import estimate_collective, make_fabric
from ddlsim.network.patterns import Mesh, Pairs
from ddlsim.network.placement import Placement

GBPS = 1e9


def test_defaults_build_and_cost():
    ocs = make_fabric("ocs_reconfig")
    assert (ocs.num_nodes, ocs.degree, ocs.reconfiguration_s, ocs.forwarding) == (512, 4, 0.01, True)
    assert ocs.network_cost(512).components["ocs_ports"] == 128 * 4
    sipml = make_fabric("sipml")
    assert (sipml.num_nodes, sipml.gpus_per_server, sipml.reconfiguration_s, sipml.forwarding) == (512, 1, 25e-6, False)
    assert sipml.network_cost(512) is None  # no published cost model: network_cost_scope says "no model"


def test_ring_step_gets_all_circuits_and_one_reconfiguration():
    fabric = make_fabric("ocs_reconfig", num_servers=16, gpus_per_server=1)
    estimate = estimate_collective("all_reduce", 10**9, 16, fabric=fabric, algorithm="ring", device=None)
    # Algorithm 5 gives all four interfaces of server i to i + 1: the ring runs at 4 x 100 Gbps,
    # after one 10 ms reconfiguration (both ring phases share the circuits).
    assert estimate.transfer_s == pytest.approx(30 * 10**9 / 16 * 8 / (400 * GBPS))
    assert estimate.latency_s == pytest.approx(0.01 + 30 * 1e-6)


def test_sipml_needs_rounds_without_forwarding():
    fabric = make_fabric("sipml", num_servers=6, degree=1, link_bandwidth="10Gbps")
    layout, placement = GroupLayout(6), Placement(6)
    mesh = fabric.price(Mesh(6, np.zeros(6, dtype=np.int64)), layout, placement)
    ring = fabric.price(Pairs(6, np.arange(6), (np.arange(6) + 1) % 6), layout, placement)
    assert ring.s_per_unit == pytest.approx(8 / (10 * GBPS)) and ring.latency_s == pytest.approx(1e-6)
    # Five destinations per server through one circuit: at least five rounds, a reconfiguration
    # before each but the first (and one to get back to the first round's circuits).
    assert mesh.s_per_unit >= 5 * 8 / (10 * GBPS)
    rounds = round(mesh.s_per_unit / (8 / (10 * GBPS)))
    assert mesh.latency_s == pytest.approx(1e-6 + rounds * 25e-6)


def test_forwarding_keeps_every_pair_reachable():
    fabric = make_fabric("ocs_reconfig", num_servers=12, gpus_per_server=1, degree=2)
    mesh = fabric.price(Mesh(12, np.zeros(12, dtype=np.int64)), GroupLayout(12), Placement(12))
    # All-to-all over 2 circuits per server: forwarded, so more than the 11 / 2 units of a direct one.
    assert mesh.s_per_unit > 11 / 2 * 8 / (100 * GBPS)
    assert np.isfinite(mesh.latency_s)
