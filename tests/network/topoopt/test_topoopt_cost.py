"""Appendix G cost model (Table 2 prices, component counts) and Table 1 technologies."""

from __future__ import annotations

import pytest

from ddlsim.core.errors import ConfigError, InfeasibleError
from ddlsim.network.fabrics.topoopt import cost
from ddlsim.network.fabrics.topoopt.technologies import TECHNOLOGIES, technology

GBPS = 1e9
FIBER = 0.30 * 500


def test_appendix_g_counts_for_128_servers():
    # "A TopoOpt system of 128 nodes with degree d uses 128 x d NICs and transceivers, but
    # 128 x 2 x d patch panel ports because of the look-ahead design."
    topo = cost.topoopt_cost(128, 4, 100 * GBPS)
    assert topo.counts == {"nics": 512, "transceivers": 512, "fibers": 512,
                           "patch_panel_ports": 1024, "switches_1x2": 512}
    assert topo.capex_usd == pytest.approx(512 * (678 + 99 + FIBER + 25) + 1024 * 100)
    # "a standard k = 8 Fat-tree has 80 switches ... or 640 switch ports in total, in addition to
    # 1 NIC per host and one transceiver per NIC and switch port."
    tree = cost.fat_tree_cost(128, 100 * GBPS)
    assert tree.counts["switch_ports"] == 640
    assert tree.counts["nics"] == 128 and tree.counts["transceivers"] == 128 + 640
    assert tree.counts["fibers"] == 128 + (640 - 128) / 2


def test_table2_rows_and_wider_links():
    assert cost.link_parts(10 * GBPS).transceiver_usd == 20
    assert cost.link_parts(25 * GBPS).nic_usd == 185
    assert cost.link_parts(40 * GBPS).switch_port_usd == 144
    assert cost.link_parts(50 * GBPS).row_gbps == 100           # next row up
    two = cost.link_parts(200 * GBPS)
    assert (two.transceiver_usd, two.nic_usd, two.switch_port_usd, two.fibers) == (198, 815, 374, 2)
    four = cost.link_parts(400 * GBPS)
    assert (four.lanes, four.transceiver_usd, four.fibers) == (2, 396, 4)
    with pytest.raises(ConfigError):
        cost.link_parts(0.0)


def test_optical_parts_do_not_grow_with_bandwidth():
    slow = cost.topoopt_cost(128, 4, 10 * GBPS)
    fast = cost.topoopt_cost(128, 4, 100 * GBPS)
    for part in ("patch_panel_ports", "switches_1x2"):
        assert slow.counts[part] * slow.unit_usd[part] == fast.counts[part] * fast.unit_usd[part]


def test_ocs_versus_patch_panel_ratio_is_near_the_papers_average():
    # Section 5.2: OCS-based TopoOpt costs 1.33x the patch-panel one on average; our counts give
    # a ratio falling from 1.51 (10 Gbps) to 1.19 (200 Gbps).
    ratios = [cost.topoopt_cost(128, 4, b * GBPS, switch="ocs_3d_mems").capex_usd
              / cost.topoopt_cost(128, 4, b * GBPS).capex_usd for b in (10, 25, 40, 100, 200)]
    assert ratios == sorted(ratios, reverse=True)
    assert 1.2 < sum(ratios) / len(ratios) < 1.45


def test_cost_equivalent_fat_tree_matches_topoopt_cost():
    grid = [10, 25, 40, 100, 200, 400, 600]
    for bandwidth in (25, 40, 100, 200):
        link_gbps = cost.cost_equivalent_fat_tree_bandwidth_bps(128, 4, bandwidth * GBPS) / GBPS
        topo = cost.topoopt_cost(128, 4, bandwidth * GBPS).capex_usd
        # The Table 2 rows on either side of the answer bracket TopoOpt's cost, and the linear
        # interpolation between them lands on it.
        low = max(g for g in grid if g <= link_gbps)
        high = min(g for g in grid if g > link_gbps)
        cost_low = cost.fat_tree_cost(128, low * GBPS).capex_usd
        cost_high = cost.fat_tree_cost(128, high * GBPS).capex_usd
        assert cost_low <= topo <= cost_high
        assert cost_low + (cost_high - cost_low) * (link_gbps - low) / (high - low) == pytest.approx(topo)
    # At 100 Gbps the cost-equivalent fat-tree has d x B' = 192 Gbps links: B' = 48 < B.
    assert cost.cost_equivalent_fat_tree_bandwidth_bps(128, 4, 100 * GBPS) / 4 < 100 * GBPS


def test_oversubscribed_and_expander_are_cheaper():
    full = cost.fat_tree_cost(128, 400 * GBPS)
    half = cost.fat_tree_cost(128, 400 * GBPS, oversubscription=2)
    assert half.counts["switch_ports"] == 128 * 3 and half.capex_usd < full.capex_usd
    topo = cost.topoopt_cost(128, 4, 100 * GBPS)
    assert cost.expander_cost(128, 4, 100 * GBPS).capex_usd < topo.capex_usd
    with pytest.raises(ConfigError):
        cost.fat_tree_cost(128, 100 * GBPS, oversubscription=0.5)


def test_network_cost_record_and_power():
    record = cost.topoopt_cost(16, 2, 100 * GBPS).network_cost()
    assert record.scope == "job" and record.components["transceivers"] == 32
    assert record.power_w == pytest.approx(32 * 3.5)
    tree = cost.ideal_switch_cost(16, 2, 100 * GBPS).network_cost()
    assert tree.power_w == pytest.approx((16 + 80) * 3.5 * 2 + 80 * 5.0 * 1)


def test_cost_equivalence_out_of_range():
    with pytest.raises(InfeasibleError, match="no fat-tree"):
        cost.cost_equivalent_fat_tree_bandwidth_bps(128, 400, 200 * GBPS)
    with pytest.raises(ConfigError):
        cost.topoopt_cost(128, 4, 100 * GBPS, switch="rotornet")


def test_table1_technologies():
    assert technology("patch_panel").port_count == 1008
    assert technology("ocs_3d_mems").reconfiguration_latency_s == pytest.approx(0.01)
    assert technology("tunable_lasers").reconfiguration_latency_s == pytest.approx(3.8e-9)
    assert technology("ocs_3d_mems").cost_per_port_usd == cost.OCS_PORT_USD
    assert technology("patch_panel").cost_per_port_usd == cost.PATCH_PANEL_PORT_USD
    assert len(TECHNOLOGIES) == 6
    with pytest.raises(ConfigError, match="unknown optical switch"):
        technology("mirror")
