"""Leaf-spine packet model: latencies from the constants, capacity limits, shared buffers."""

import dataclasses

import numpy as np
import pytest

from ddlsim.core.errors import ConfigError
from ddlsim.network.packet.leafspine_model import LeafSpinePacketModel
from ddlsim.network.packet.reference import LeafSpineReference, leafspine_params
from ddlsim.network.packet.run_config import PacketRunConfig

GPU_SER_S = 1500 * 8 / 900e9
UPLINK_SER_S = 1500 * 8 / 800e9


def short_run(load, locality):
    return PacketRunConfig(load=load, locality=locality, warmup_s=5e-6, measure_s=10e-6)


def test_reference_constants():
    params = leafspine_params(1024)
    assert (params.num_pods, params.gpus_per_pod, params.num_planes) == (128, 8, 4)
    assert params.injection_bps == 3.6e12  # 4 x 900 Gb/s NVLink per GPU
    assert params.gpu_link_bps == 900e9 and params.uplink_bps == 800e9  # per plane
    assert (params.leaf_latency_s, params.spine_latency_s) == (1e-6, 1e-6)
    assert (params.leaf_buffer_bytes, params.spine_buffer_bytes) == (16 * 10**6, 64 * 10**6)


def test_low_load_latencies_match_the_constants():
    model = LeafSpinePacketModel(leafspine_params(32), short_run(0.02, 0.5))
    model.run()
    latency, local = model.stats.latencies(model.slot_s)
    assert latency[local].min() == pytest.approx(2 * GPU_SER_S + 1e-6)  # GPU -> leaf -> GPU
    assert latency[~local].min() == pytest.approx(2 * GPU_SER_S + 2 * UPLINK_SER_S + 3e-6)  # leaf, spine, leaf
    assert np.median(latency[local]) < 1.1e-6


def test_inter_pod_throughput_is_capped_by_the_uplinks():
    # 4 x 800 Gb/s of uplink for 8 GPUs of 3.6 Tb/s each: at most 1/9 of the injection bandwidth
    result = LeafSpinePacketModel(leafspine_params(32), short_run(1.0, 0.0)).run()
    assert result.throughput == pytest.approx(3.2 / 28.8, rel=0.03)
    local = LeafSpinePacketModel(leafspine_params(32), short_run(0.9, 1.0)).run()
    assert local.throughput == pytest.approx(0.9, abs=0.02) and local.loss_ratio == 0


def test_shared_buffers_overflow_into_loss_and_are_accounted_exactly():
    params = dataclasses.replace(leafspine_params(32), leaf_buffer_bytes=150_000)  # 100 packets per leaf
    model = LeafSpinePacketModel(params, short_run(1.0, 0.3))
    result = model.run()
    assert result.loss_ratio > 0.1
    queued = np.bincount(model.buffer_of[model.buffer_of >= 0], weights=model.bank.length[model.buffer_of >= 0],
                         minlength=model.buffer_used.size)
    assert np.array_equal(queued, model.buffer_used)
    assert np.all(model.buffer_used <= model.buffer_packets)
    totals = model.totals
    assert totals["generated"] == totals["delivered"] + totals["lost"] + model.bank.num_live


def test_deterministic():
    run = short_run(0.7, 0.5)
    params = leafspine_params(32)
    assert LeafSpinePacketModel(params, run).run() == LeafSpinePacketModel(params, run).run()


def test_reference_parses_units():
    assert LeafSpineReference(spine_latency="450ns").params(64).spine_latency_s == pytest.approx(450e-9)


def test_leaf_and_spine_latencies_are_separate():
    params = dataclasses.replace(leafspine_params(32), spine_latency_s=450e-9)  # a Tomahawk 4 spine
    model = LeafSpinePacketModel(params, short_run(0.02, 0.0))
    model.run()
    latency, _ = model.stats.latencies(model.slot_s)
    assert latency.min() == pytest.approx(2 * GPU_SER_S + 2 * UPLINK_SER_S + 2e-6 + 450e-9)


@pytest.mark.parametrize("policy", ["dynamic", "static"])
def test_buffer_policies_keep_accounts_and_stop_buffer_hogging(policy):
    run = PacketRunConfig(load=1.0, locality=0.0)  # the paper's 20 + 20 us: leaf buffers fill up
    shared = LeafSpinePacketModel(leafspine_params(32), run).run()
    model = LeafSpinePacketModel(leafspine_params(32, policy), run)
    result = model.run()
    # complete sharing lets the congested uplink queue fill the leaf buffer, so packets coming down
    # from the spine find no room; a per-port limit keeps room for them and the uplinks stay busy
    assert shared.throughput < 0.09
    assert result.throughput == pytest.approx(3.2 / 28.8, rel=0.03)
    on_switch = model.buffer_of >= 0
    queued = np.bincount(model.buffer_of[on_switch], weights=model.bank.length[on_switch],
                         minlength=model.buffer_used.size)
    assert np.array_equal(queued, model.buffer_used) and np.all(model.buffer_used <= model.buffer_packets)
    uplinks = model.kind == 2
    leaf_packets = 16 * 10**6 // 1500
    if policy == "static":  # 8 GPU ports + 1 uplink share a leaf's buffer equally
        assert model.bank.length[uplinks].max() <= leaf_packets // 9
    else:  # a port stops at alpha x the free space: at most half the buffer with alpha = 1
        assert model.bank.length[uplinks].max() <= leaf_packets // 2 + 8


def test_unknown_buffer_policy():
    with pytest.raises(ConfigError, match="buffer_policy = 'magic'"):
        leafspine_params(32, "magic")
