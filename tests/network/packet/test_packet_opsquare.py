"""OPSquare packet model: latencies from first principles, conservation, contention, loss."""

import dataclasses

import numpy as np
import pytest

from ddlsim.core.errors import ConfigError
from ddlsim.network.fabrics.opsquare import OpsquareTopology
from ddlsim.network.fabrics.opsquare.params import OpsquareParams
from ddlsim.network.packet.opsquare_model import OpsquarePacketModel, pick_one_per_key
from ddlsim.network.packet.run_config import PacketRunConfig

SLOT_S = 1500 * 8 / 3.6e12  # one 1,500-byte packet at 3.6 Tb/s


def small(pods=4, size=8, groups=2, **changes):
    return dataclasses.replace(OpsquareParams(topology=OpsquareTopology(pods, size, groups)), **changes)


def short_run(load, locality, **changes):
    return PacketRunConfig(load=load, locality=locality, warmup_s=3e-6, measure_s=6e-6, **changes)


def test_pick_one_per_key_picks_exactly_one_uniformly():
    rng = np.random.default_rng(0)
    keys = np.array([0, 0, 0, 2, 5, 5])
    wins = np.zeros(6)
    for _ in range(3000):
        chosen = pick_one_per_key(keys, 6, rng)
        assert np.bincount(keys[chosen], minlength=6).tolist() == [1, 0, 1, 0, 0, 1]
        wins += chosen
    assert wins[3] == 3000
    assert wins[:3] / 3000 == pytest.approx([1 / 3] * 3, abs=0.04)


def test_low_load_latencies_match_the_constants():
    model = OpsquarePacketModel(small(propagation_s=5e-9), short_run(0.01, 0.5))
    result = model.run()
    hop_s = SLOT_S + 30e-9 + 10e-9 + 5e-9  # serialisation, preamble, label processing, fibre
    latencies, local = model.stats.latencies(model.slot_s)
    assert latencies[local].min() == pytest.approx(hop_s)
    assert latencies[~local].min() == pytest.approx(hop_s)  # same index in another pod: one inter-pod hop
    two_hops = 2 * hop_s + 80e-9  # plus transceiver forwarding at the relay
    assert np.isclose(latencies[~local], two_hops).mean() > 0.8  # 7 of 8 remote destinations need two hops
    assert result.latency_max_s < two_hops + 5 * SLOT_S
    assert result.loss_ratio == 0 and result.throughput == pytest.approx(0.01, rel=0.2)


def test_packets_are_conserved_and_runs_are_deterministic():
    run = short_run(0.9, 0.3)
    params = small(buffer_bytes=6000)
    first, second = OpsquarePacketModel(params, run), OpsquarePacketModel(params, run)
    a, b = first.run(), second.run()
    assert a == b
    totals = first.totals
    assert totals["lost"] > 0
    assert totals["generated"] == totals["delivered"] + totals["lost"] + first.bank.num_live


def test_head_of_line_blocking_saturates_near_the_textbook_value():
    # pods of one node: all traffic crosses one 64-port inter-pod switch, an input-queued switch
    # with FIFO buffers, whose uniform-traffic saturation throughput tends to 2 - sqrt(2) = 0.586
    params = small(pods=64, size=1, groups=1, buffer_bytes=10**8)
    result = OpsquarePacketModel(params, short_run(1.0, 0.0)).run()
    assert 0.57 < result.throughput < 0.62


def test_slower_retransmission_lowers_saturation_throughput():
    params = small(pods=16, size=1, groups=1, buffer_bytes=10**8)
    prompt = OpsquarePacketModel(params, short_run(1.0, 0.0)).run()
    slow = OpsquarePacketModel(params, short_run(1.0, 0.0), retransmit_delay_s=20e-9).run()
    assert slow.throughput < prompt.throughput - 0.1


def test_local_traffic_is_ideal_at_full_load():
    result = OpsquarePacketModel(small(), short_run(1.0, 1.0)).run()
    assert result.throughput == pytest.approx(1.0, abs=0.02)
    assert result.loss_ratio == 0
    assert result.latency_local_mean_s < 0.5e-6


def test_transmit_buffer_must_hold_a_packet():
    with pytest.raises(ConfigError, match="transmit_buffer"):
        OpsquarePacketModel(small(buffer_bytes=1000), short_run(0.5, 0.5))
