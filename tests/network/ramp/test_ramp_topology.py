"""RAMP Table 2 figures and coordinates."""

from __future__ import annotations

import numpy as np
import pytest

from ddlsim.core.errors import ConfigError
from ddlsim.network.fabrics.ramp.topology import RampDims, table2_as_printed, table2_figures

MAX = RampDims(x=32, racks=32, wavelengths=64)
EXAMPLE = RampDims(x=3, racks=3, wavelengths=6)


def test_maximum_scale_figures_match_the_paper_prose() -> None:
    figures = table2_figures(MAX)
    assert figures["num_nodes"] == 65536
    assert figures["node_capacity_bps"] == pytest.approx(12.8e12)
    assert figures["total_capacity_bps"] == pytest.approx(0.8388608e18)  # "0.84 Ebps"
    assert figures["num_subnets"] == 32768  # Table 3's 32.8k couplers
    assert figures["num_transceivers"] == 2097152  # Table 3's 2.1M transceivers
    assert figures["num_fibres"] == 2 * 32 * 32**3
    assert figures["num_physical_links"] == 2 * 32 * 32**2
    assert figures["bisection_bandwidth_bps"] == pytest.approx(figures["total_capacity_bps"] / 2)


def test_table2_as_printed_agrees_on_counts_and_differs_by_x_on_capacity() -> None:
    printed = table2_as_printed(MAX)
    ours = table2_figures(MAX)
    for key in ("num_nodes", "num_fibres", "num_physical_links", "num_subnets"):
        assert printed[key] == ours[key]
    # Printed b B Lambda x^2 is one transceiver group per node: a factor x below 0.84 Ebps.
    assert ours["total_capacity_bps"] / printed["total_capacity_bps"] == pytest.approx(MAX.x)


def test_example_of_fig8_has_54_nodes_and_27_subnets() -> None:
    assert EXAMPLE.num_nodes == 54
    assert EXAMPLE.num_subnets == 27
    assert EXAMPLE.device_groups_per_rack == 2


def test_coordinates_round_trip() -> None:
    nodes = np.arange(MAX.num_nodes)
    g, j, lam = MAX.coords(nodes)
    assert np.array_equal(MAX.node_id(g, j, lam), nodes)
    assert (g.max(), j.max(), lam.max()) == (31, 31, 63)


@pytest.mark.parametrize("kwargs", [dict(x=0, racks=1, wavelengths=1), dict(x=2, racks=3, wavelengths=4),
                                    dict(x=2, racks=2, wavelengths=2, line_rate_bps=-1.0)])
def test_invalid_dimensions_are_config_errors(kwargs: dict) -> None:
    with pytest.raises(ConfigError):
        RampDims(**kwargs)
