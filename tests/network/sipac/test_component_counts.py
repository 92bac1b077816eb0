"""Component counts of SiPAC Fig. 9's topologies against the structures the papers state."""

from __future__ import annotations

import pytest

from ddlsim.core.errors import ConfigError
from ddlsim.network.fabrics.component_counts import (
    bcube_counts,
    counts_near,
    dragonfly_counts,
    fat_tree_counts,
    sipac_counts,
    superpod_counts,
    torus_counts,
)


@pytest.mark.parametrize(("levels", "cus"), [(2, 256), (3, 4096)])
def test_sipac_sizes_of_section_iii_a(levels, cus):
    """III-A: "using radix-16 WSSes, we could achieve a topology size of 256 for L = 2 and 4,096 for L = 3"."""
    counts = sipac_counts(16, levels, wavelengths=16)
    assert counts.num_ranks == cus
    assert counts.switches == levels * 16 ** (levels - 1)  # r^(L-1) r-port WSSes per level
    assert counts.links == counts.transceivers == levels * cus  # L transceivers per CU, transparent WSSes
    assert counts.lasers == counts.transceivers and counts.lanes == 16 * counts.transceivers


def test_the_fig4_switch_has_a_ring_per_input_output_pair():
    """Fig. 4: a 3 x 3 WSS with w = 9 lines, w / r = 3 per output: 9 rings."""
    assert sipac_counts(3, 1, wavelengths=9).rings == 9
    with pytest.raises(ConfigError, match="wavelengths = 8"):
        sipac_counts(3, 1, wavelengths=8)


def test_bcube_has_sipac_wiring_with_a_transceiver_at_each_end():
    sipac, bcube = sipac_counts(8, 3, wavelengths=8), bcube_counts(8, 3)
    assert (bcube.num_ranks, bcube.links, bcube.switches) == (sipac.num_ranks, sipac.links, sipac.switches)
    assert bcube.transceivers == 2 * sipac.transceivers


def test_torus_fat_tree_dragonfly_and_superpod_closed_forms():
    torus = torus_counts(16, 2)
    assert (torus.num_ranks, torus.links, torus.transceivers, torus.switches) == (256, 512, 1024, 0)
    fat_tree = fat_tree_counts(4)  # Al-Fares et al.: k = 4 holds 16 hosts and 20 switches
    assert (fat_tree.num_ranks, fat_tree.switches, fat_tree.links) == (16, 20, 48)
    dragonfly = dragonfly_counts(4)  # t = 2 terminals, h = 1, g = 5 groups
    assert (dragonfly.num_ranks, dragonfly.switches, dragonfly.switch_radix) == (40, 20, 6)
    assert dragonfly.links == 40 + 5 * 6 + 5 * 4 // 2
    superpod = superpod_counts(1)
    assert (superpod.num_ranks, superpod.links, superpod.transceivers) == (8, 8 * 12 + 16, 32)


def test_paper_statements_hold_near_a_thousand_cus():
    """VI-A.2: SiPAC(L = n) has the links of BCube(L = n) and the nD torus, fewer than the SuperPod,
    and the fewest transceivers; SiPAC(L = 3) has about a 3-level fat tree's switches."""
    sipac3, bcube3, torus3 = (counts_near(family, 1000, 3) for family in ("sipac", "bcube", "torus"))
    assert sipac3.num_ranks == bcube3.num_ranks == torus3.num_ranks == 1000
    assert sipac3.links == bcube3.links == torus3.links
    others = [counts_near(family, 1024) for family in ("fat_tree", "dragonfly", "superpod")]
    assert all(sipac3.transceivers / sipac3.num_ranks < other.transceivers / other.num_ranks
               for other in [bcube3, torus3, *others])
    fat_tree = others[0]
    assert fat_tree.num_ranks == 1024 and 0.8 < sipac3.switches / fat_tree.switches < 1.25
    assert counts_near("sipac", 1024, 2).switches < sipac3.switches / 4


def test_unknown_family_and_tiny_sizes_are_config_errors():
    with pytest.raises(ConfigError, match="topologies = 'mesh'"):
        counts_near("mesh", 64)
    with pytest.raises(ConfigError, match="num_ranks = 1"):
        counts_near("sipac", 1)
    with pytest.raises(ConfigError, match="side = 2"):
        torus_counts(2, 2)
