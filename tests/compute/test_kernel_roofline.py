"""The kernel-level roofline: tile and wave quantisation, host versus device time, the config hook."""

import math

import pytest

from ddlsim.compute.devices import DeviceConfig, DeviceSpec
from ddlsim.compute.kernel_registry import kernels_for
from ddlsim.compute.kernel_roofline import (
    KernelEfficiency,
    KernelRoofline,
    gemm_utilisation,
    kernel_time_s,
    kernels_time_s,
)
from ddlsim.compute.model import ComputeConfig, ComputeModel
from ddlsim.compute.roofline import Roofline
from ddlsim.core.errors import ConfigError
from ddlsim.core.types import Phase
from ddlsim.core.work import ComputeTask, Kernel, ShardSignature
from ddlsim.workload.kernels.primitives import gemm, memory
from ddlsim.workload.transformer.layer import LayerShape

A100 = DeviceSpec.from_config(DeviceConfig(name="a100_80gb"))
PEAK, BANDWIDTH = A100.peak("fp16"), A100.memory_bandwidth_bytes_per_s


def test_full_waves_of_large_tiles_are_fully_used():
    # 108 tiles of 256 x 128 fill the 108 SMs once.
    assert gemm_utilisation(256 * 12, 128 * 9, 1) == pytest.approx(1.0)


def test_one_tile_too_many_costs_a_second_wave():
    # 109 tile-rows of 128 x 128 -> 2 waves at best for the large tiles; a smaller tile recovers
    # part of it, at its own lower efficiency.
    full = gemm_utilisation(128 * 108, 128, 1)
    over = gemm_utilisation(128 * 109, 128, 1)
    assert full == pytest.approx(1.0) and over < 0.9


def test_small_tiles_are_penalised_below_the_l2_ridge():
    # A 64 x 64 output can only use 64 x 64 tiles: one SM of 108, at 32/64 of its speed.
    assert gemm_utilisation(64, 64, 1) == pytest.approx((1 / 108) * (32 / 64))


def test_kernel_time_is_the_larger_of_compute_and_memory_plus_the_gap():
    efficiency = KernelEfficiency(gemm=0.5, memory=0.5, device_s_per_kernel=1e-6)
    big = gemm("g", 256 * 12, 128 * 9, 4096)
    assert kernel_time_s(big, PEAK, BANDWIDTH, efficiency) == pytest.approx(big.flop / (PEAK * 0.5) + 1e-6)
    stream = memory("m", 1e9)
    assert kernel_time_s(stream, PEAK, BANDWIDTH, efficiency) == pytest.approx(1e9 / (BANDWIDTH * 0.5) + 1e-6)


def test_a_task_costs_the_larger_of_host_and_device_time():
    kernels = [memory("tiny", 1e3, launches=3), memory("tiny", 1e3, launches=2)]
    efficiency = KernelEfficiency(memory=1.0, host_s_per_launch=10e-6)
    device, host = kernels_time_s(kernels, PEAK, BANDWIDTH, efficiency)
    assert host == pytest.approx(50e-6) and device < host
    layer = LayerShape(1024, 16, 1024, causal=True)
    signature = ShardSignature("gpt_layer", tuple(layer.signature_shape(1).items()), 1)
    roofline = KernelRoofline(device=A100, efficiencies=_classes(), kind_classes={}, kernel=efficiency)
    forward = kernels_for(signature, Phase.FORWARD)
    task = ComputeTask("layer_forward", Phase.FORWARD, signature, 1.0)
    device, host = kernels_time_s(forward, PEAK, BANDWIDTH, efficiency)
    assert roofline.task_time_s(task) == pytest.approx(max(device, host))


def test_kinds_without_kernels_fall_back_to_the_class_roofline():
    roofline = KernelRoofline(device=A100, efficiencies=_classes(), kind_classes={"dlrm_shard": "embedding"})
    plain = Roofline(device=A100, efficiencies=_classes(), kind_classes={"dlrm_shard": "embedding"})
    task = ComputeTask("x", Phase.FORWARD, ShardSignature("dlrm_shard", (("tables", 1),), 4), 1e12, 1e9)
    assert roofline.task_time_s(task) == plain.task_time_s(task)
    assert roofline.shape_time_s(task.signature, task.phase, task.flop, task.memory_bytes) == plain.task_time_s(task)


def test_kernel_model_is_the_default_and_can_be_switched_off():
    config = ComputeConfig()
    model = ComputeModel.from_config(config, A100)
    assert isinstance(model.roofline, KernelRoofline)
    assert model.roofline.kernel.gemm == pytest.approx(267.9 / 312)  # the A100's published MAMF
    assert model.roofline.kernel.attention is not None and model.roofline.kernel.sm_count == 108
    config.kernels.enabled = False
    assert type(ComputeModel.from_config(config, A100).roofline) is Roofline
    config.kernels.enabled = True
    config.kernels.host_per_launch = "40us"
    model = ComputeModel.from_config(config, A100)
    assert isinstance(model.roofline, KernelRoofline) and model.roofline.kernel.host_s_per_launch == 40e-6
    config.kernels.gemm = 1.5
    with pytest.raises(ConfigError, match="kernels.gemm"):
        ComputeModel.from_config(config, A100)


def test_kernel_records_validate():
    with pytest.raises(ConfigError):
        Kernel("bad", bytes=-1.0)
    assert not math.isnan(gemm("g", 1, 1, 1).bytes)


def _classes():
    from ddlsim.compute.roofline import Efficiency

    return {"gemm": Efficiency(0.5, 0.8), "embedding": Efficiency(0.3, 0.4), "elementwise": Efficiency(0.5, 0.7)}
