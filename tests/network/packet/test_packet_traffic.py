"""Uniform random destinations with a locality factor."""

import numpy as np
import pytest

from ddlsim.core.errors import ConfigError
from ddlsim.network.packet.traffic import LocalityTraffic


@pytest.mark.parametrize("locality", [0.0, 0.33, 1.0])
def test_destinations_respect_locality(locality):
    traffic = LocalityTraffic(num_nodes=64, pod_size=8, load=1.0, locality=locality)
    rng = np.random.default_rng(1)
    src = np.repeat(np.arange(64), 500)
    dst = traffic.destinations(rng, src)
    assert np.all(dst != src) and dst.min() >= 0 and dst.max() < 64
    local_share = np.mean(src // 8 == dst // 8)
    assert local_share == pytest.approx(locality, abs=0.01)
    # remote destinations are uniform over the 56 nodes of the other pods
    remote = dst[src // 8 != dst // 8] if locality < 1 else None
    if remote is not None:
        counts = np.bincount(remote, minlength=64)
        assert counts.max() / counts[counts > 0].mean() < 1.25


def test_load_is_the_fraction_of_nodes_starting_a_packet():
    traffic = LocalityTraffic(num_nodes=1000, pod_size=10, load=0.3, locality=0.5)
    rng = np.random.default_rng(0)
    starts = sum(traffic.generate(rng)[0].size for _ in range(200))
    assert starts / (1000 * 200) == pytest.approx(0.3, abs=0.01)


def test_invalid_traffic():
    with pytest.raises(ConfigError, match="load = 1.5"):
        LocalityTraffic(16, 4, 1.5, 0.5)
    with pytest.raises(ConfigError, match="locality = 0.5: must be 1 when there is a single pod"):
        LocalityTraffic(4, 4, 0.5, 0.5)
    with pytest.raises(ConfigError, match="needs pods of at least 2 nodes"):
        LocalityTraffic(4, 1, 0.5, 0.5)
