"""The roofline against hand calculations on the H100 datasheet."""

import pytest

from ddlsim.compute.devices import DeviceConfig, DeviceSpec
from ddlsim.compute.roofline import DEFAULT_KIND_CLASSES, Efficiency, Roofline
from ddlsim.core.errors import ConfigError
from ddlsim.core.work import ComputeTask, ShardSignature

H100 = DeviceSpec.from_config(DeviceConfig(name="h100_sxm"))
ROOFLINE = Roofline(H100, {"gemm": Efficiency(0.5, 0.8), "embedding": Efficiency(0.3, 0.4, 1e-5),
                           "elementwise": Efficiency(0.5, 0.7)}, DEFAULT_KIND_CLASSES)
LAYER = ShardSignature("megatron_layer", (("d_model", 4096),), 8, "bf16", True)


def test_compute_bound_gemm():
    task = ComputeTask("layer", "forward", LAYER, flop=989.5e12, memory_bytes=1e9)
    assert ROOFLINE.task_time_s(task) == pytest.approx(2.0)  # peak x 0.5 efficiency


def test_memory_bound_optimizer_step_is_elementwise():
    task = ComputeTask("adam", "optimizer", LAYER, flop=1e9, memory_bytes=3.35e12 * 0.7)
    assert ROOFLINE.work_class(LAYER, "optimizer") == "elementwise"
    assert ROOFLINE.task_time_s(task) == pytest.approx(1.0)


def test_embedding_class_with_overhead():
    shard = ShardSignature("dlrm_shard", (("tables", 4),), 512, "fp16", False)
    task = ComputeTask("lookup", "forward", shard, flop=0, memory_bytes=3.35e12 * 0.4 * 1e-3)
    assert ROOFLINE.task_time_s(task) == pytest.approx(1e-3 + 1e-5)


def test_precision_picks_the_peak():
    fp32 = ComputeTask("layer", "forward", ShardSignature("megatron_layer", (), 1, "fp32"), flop=67e12 * 0.5)
    assert ROOFLINE.task_time_s(fp32) == pytest.approx(1.0)


def test_efficiency_and_classes_are_checked():
    with pytest.raises(ConfigError, match="flop"):
        Efficiency(0.0, 0.5)
    with pytest.raises(ConfigError, match="memory"):
        Efficiency(0.5, 1.5)
    with pytest.raises(ConfigError, match="classes"):
        Roofline(H100, {"gemm": Efficiency(0.5, 0.5), "elementwise": Efficiency(0.5, 0.5)},
                 {"megatron_layer": "tensor"})
