"""The published kernel constants and the classes of the one pricing path (compute/kernel_tables.py)."""

import pytest

from ddlsim.compute.devices import DeviceConfig, DeviceSpec
from ddlsim.compute.kernel_roofline import KernelEfficiency, compute_fraction, kernel_time_s
from ddlsim.compute.kernel_tables import FLASH_TABLES, KERNEL_SHEETS
from ddlsim.compute.model import ComputeConfig, ComputeModel
from ddlsim.core.datasheets import DATASHEETS
from ddlsim.core.errors import ConfigError
from ddlsim.core.work import Kernel, KernelClass

H100 = DeviceSpec.from_config(DeviceConfig(name="h100_sxm"))
FORWARD, BACKWARD = KernelClass.ATTENTION_FORWARD, KernelClass.ATTENTION_BACKWARD


def test_flash_table_returns_the_papers_measurements_at_their_shapes():
    fa3 = FLASH_TABLES["fa3_h100"]
    # FlashAttention-3 Fig. 5/6, head dim 128: 646 TFLOP/s forward at 8k, 616 causal at 16k, 559 backward at 8k.
    assert fa3.fraction(FORWARD, 128, 8192, False) * 989.4e12 == pytest.approx(646e12)
    assert fa3.fraction(FORWARD, 128, 16384, True) * 989.4e12 == pytest.approx(616e12)
    assert fa3.fraction(BACKWARD, 128, 8192, False) * 989.4e12 == pytest.approx(559e12)


def test_flash_table_interpolates_in_log_space_and_is_flat_outside():
    fa3 = FLASH_TABLES["fa3_h100"]
    low, high = fa3.fraction(FORWARD, 128, 2048, True), fa3.fraction(FORWARD, 128, 4096, True)
    middle = fa3.fraction(FORWARD, 128, 2896, True)  # about the geometric mean of 2k and 4k
    assert low < middle < high and middle == pytest.approx((low + high) / 2, rel=0.01)
    assert fa3.fraction(FORWARD, 128, 131072, True) == fa3.fraction(FORWARD, 128, 16384, True)
    assert fa3.fraction(FORWARD, 256, 8192, False) == fa3.fraction(FORWARD, 128, 8192, False)
    assert fa3.fraction(FORWARD, 64, 8192, False) < fa3.fraction(FORWARD, 96, 8192, False) < \
        fa3.fraction(FORWARD, 128, 8192, False)


def test_causal_backward_scales_the_measured_backward_by_the_forward_causal_ratio():
    fa3 = FLASH_TABLES["fa3_h100"]
    ratio = fa3.fraction(FORWARD, 128, 2048, True) / fa3.fraction(FORWARD, 128, 2048, False)
    assert fa3.fraction(BACKWARD, 128, 2048, True) == pytest.approx(ratio * fa3.fraction(BACKWARD, 128, 2048, False))


def test_a100_flash_plateaus_at_the_fa2_papers_fractions():
    fa2 = FLASH_TABLES["fa2_a100"]
    assert fa2.fraction(FORWARD, 128, 16384, False) == pytest.approx(0.73)
    assert fa2.fraction(BACKWARD, 128, 16384, False) == pytest.approx(0.63)
    assert fa2.fraction(FORWARD, 128, 512, True) < fa2.fraction(FORWARD, 128, 512, False)


def test_every_device_sheet_names_a_known_flash_table_and_a_fraction_in_range():
    assert set(KERNEL_SHEETS) == set(DATASHEETS)  # every device the `device` group offers has its sheet
    for name, sheet in KERNEL_SHEETS.items():
        assert sheet.attention in (*FLASH_TABLES, "none"), name
        assert 0 < sheet.gemm <= 1 and 0 < sheet.memory <= 1, name
        assert sheet.source, name


def test_each_class_is_priced_by_its_own_rule():
    efficiency = KernelEfficiency(gemm=0.8, memory=0.5, sm_count=132, l2_ridge_flop_per_byte=64.0,
                                  attention=FLASH_TABLES["fa3_h100"])
    peak, bandwidth = H100.peak("bf16"), H100.memory_bandwidth_bytes_per_s
    attention = Kernel("fa", flop=1e12, m=8192, n=8192, k=128, batch=8, kernel_class=FORWARD, causal=True)
    assert compute_fraction(attention, efficiency) == FLASH_TABLES["fa3_h100"].fraction(FORWARD, 128, 8192, True)
    assert kernel_time_s(attention, peak, bandwidth, efficiency) == pytest.approx(
        1e12 / (peak * compute_fraction(attention, efficiency)))
    norm = Kernel("norm", bytes=1e9, kernel_class=KernelClass.NORM)
    assert kernel_time_s(norm, peak, bandwidth, efficiency) == pytest.approx(1e9 / (0.5 * bandwidth))
    host = Kernel("call", launches=3, kernel_class=KernelClass.HOST)
    assert not host.on_device and kernel_time_s(host, peak, bandwidth, efficiency) == 0.0
    without_table = KernelEfficiency(gemm=0.8, memory=0.5)
    assert compute_fraction(attention, without_table) == 0.8


def test_h100_defaults_come_from_the_sheet_and_overrides_win():
    model = ComputeModel.from_config(ComputeConfig(), H100)
    assert model.roofline.kernel.gemm == pytest.approx(792.1 / 989)
    assert model.roofline.kernel.sm_count == 132
    config = ComputeConfig()
    config.kernels.gemm = 0.7
    config.kernels.attention = "none"
    kernel = ComputeModel.from_config(config, H100).roofline.kernel
    assert kernel.gemm == 0.7 and kernel.attention is None
    config.kernels.attention = "fa9"
    with pytest.raises(ConfigError, match="kernels.attention = 'fa9'"):
        ComputeModel.from_config(config, H100)
