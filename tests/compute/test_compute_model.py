"""The compute model's source policy: measured, then scaled, then roofline; one device only."""

import pytest
from compute_rows import layer, write_profile

import ddlsim
from ddlsim.compute.devices import DeviceConfig, DeviceSpec
from ddlsim.compute.model import ComputeConfig, ComputeModel, KernelModelConfig
from ddlsim.core.errors import ConfigError, InfeasibleError
from ddlsim.core.types import ComputeSource
from ddlsim.core.work import ComputeTask

H100 = DeviceSpec.from_config(DeviceConfig(name="h100_sxm"))
DEVICE = H100.profile_name


def model(tmp_path, **settings) -> ComputeModel:
    """The source policy on the task-totals roofline (the tasks here are synthetic FLOP counts)."""
    config = ComputeConfig(profile_dirs=[str(tmp_path)], shipped_profiles=False,
                           kernels=KernelModelConfig(enabled=False), **settings)
    return ComputeModel.from_config(config, H100)


def task(d_model, flop, phase="forward", memory_bytes=0.0, batch=2):
    return ComputeTask("layer", phase, layer(d_model, batch), flop=flop, memory_bytes=memory_bytes)


def test_exact_row_is_measured(tmp_path):
    write_profile(tmp_path, DEVICE, layer(1024), "forward", 2.5e-3, 1e12)
    estimate = model(tmp_path).estimate(task(1024, 1e12))
    assert (estimate.time_s, estimate.source, estimate.device) == (2.5e-3, ComputeSource.MEASURED, DEVICE)


def test_nearby_shape_is_scaled_by_the_roofline_ratio(tmp_path):
    write_profile(tmp_path, DEVICE, layer(1024), "forward", 2.5e-3, 1e12)
    estimate = model(tmp_path).estimate(task(2048, 4e12))
    assert estimate.source is ComputeSource.SCALED
    assert estimate.time_s == pytest.approx(4 * 2.5e-3)  # compute-bound at both shapes: FLOP ratio


def test_scaling_carries_the_measured_efficiency_not_the_roofline_one(tmp_path):
    write_profile(tmp_path, DEVICE, layer(1024), "forward", 2.5e-3, 1e12)
    compute = model(tmp_path)
    roofline_s = compute.roofline.task_time_s(task(2048, 4e12))
    assert compute.estimate(task(2048, 4e12)).time_s / roofline_s == pytest.approx(
        2.5e-3 / compute.roofline.task_time_s(task(1024, 1e12)))


def test_far_shape_falls_back_to_roofline(tmp_path):
    write_profile(tmp_path, DEVICE, layer(1024), "forward", 2.5e-3, 1e12)
    compute = model(tmp_path, max_scale_ratio=8.0)
    far = task(8192, 64e12)
    assert compute.estimate(far).source is ComputeSource.ROOFLINE
    assert compute.estimate(far).time_s == compute.roofline.task_time_s(far)
    assert model(tmp_path, max_scale_ratio=0.0).estimate(far).source is ComputeSource.SCALED


def test_policies(tmp_path):
    write_profile(tmp_path, DEVICE, layer(1024), "forward", 2.5e-3, 1e12)
    assert model(tmp_path, source="roofline").estimate(task(1024, 1e12)).source is ComputeSource.ROOFLINE
    assert model(tmp_path, scaling=False).estimate(task(2048, 4e12)).source is ComputeSource.ROOFLINE
    with pytest.raises(InfeasibleError, match="d_model=2048"):
        model(tmp_path, source="measured").estimate(task(2048, 4e12))
    with pytest.raises(ConfigError, match="source"):
        model(tmp_path, source="guess")


def test_another_devices_profiles_are_never_used(tmp_path):
    write_profile(tmp_path, "NVIDIA A100-SXM4-80GB", layer(1024), "forward", 9e-3, 1e12)
    estimate = model(tmp_path).estimate(task(1024, 1e12))
    assert estimate.source is ComputeSource.ROOFLINE and estimate.device == DEVICE


def test_compute_group_builds_and_checks_its_keys(tmp_path):
    components = ddlsim.build_components(["device=h100_sxm", f"compute.profile_dirs=[{tmp_path}]",
                                          "compute.gemm.flop=0.6"])
    assert components.compute.device_name == DEVICE
    assert components.compute.roofline.efficiencies["gemm"].flop == 0.6
    with pytest.raises(ConfigError, match=r"compute\.gemm\.flop"):
        ddlsim.build_components(["compute.gemm.flop=2"])
    with pytest.raises(ConfigError, match=r"compute\.profile_dirs"):
        ddlsim.build_components([f"compute.profile_dirs=[{tmp_path / 'missing'}]"])
    with pytest.raises(ConfigError, match=r"compute\.elementwise\.overhead"):
        ddlsim.build_components(["compute.elementwise.overhead=-1us"])


SMALL_MEGATRON = ["model.d_model=128", "model.heads=4", "model.layers=2", "model.seq_len=128", "parallel.micro_batch=2",
                  "parallel.data=1", "parallel.tensor=1"]


def test_compute_times_task_reports_source_and_device():
    result = ddlsim.run(["task=compute_times", "compute=roofline", "device=h100_sxm", *SMALL_MEGATRON])
    assert {row["compute_source"] for row in result.rows} == {"roofline"}
    assert {row["compute_device"] for row in result.rows} == {DEVICE}
    assert {row["phase"] for row in result.rows} >= {"forward", "backward", "optimizer"}
    with pytest.raises(InfeasibleError, match="ddlsim-profile"):
        ddlsim.run(["task=compute_times", "compute=measured", "compute.shipped_profiles=false", "device=h100_sxm",
                    *SMALL_MEGATRON])
