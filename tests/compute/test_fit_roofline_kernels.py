"""ddlsim.compute.fit_roofline --kernels: recovers the kernel roofline's constants from GPU-time rows."""


import pytest

from ddlsim.compute import fit_roofline
from ddlsim.compute.kernel_registry import kernels_for
from ddlsim.compute.kernel_roofline import KernelEfficiency, kernels_time_s
from ddlsim.compute.profile_file import ProfileRow
from ddlsim.core.types import Phase
from ddlsim.core.work import ShardSignature
from ddlsim.workload.transformer.layer import LayerShape


def synthetic_rows(device, truth: KernelEfficiency):
    rows = []
    for d_model in (512, 1024, 2048, 4096):
        for tp in (1, 2, 4):
            for batch in (1, 2, 4):
                layer = LayerShape(d_model, 16, 1024, causal=True)
                signature = ShardSignature("gpt_layer", tuple(layer.signature_shape(tp).items()), batch)
                for phase in (Phase.FORWARD, Phase.BACKWARD):
                    kernels = kernels_for(signature, phase)
                    device_s, _ = kernels_time_s(kernels, device.peak("fp16"), device.memory_bandwidth_bytes_per_s,
                                                 truth)
                    rows.append(ProfileRow(signature, phase, "GPU", device_s, 0.0, 0.0, len(kernels)))
    return rows


def test_kernel_fit_recovers_known_constants():
    device = fit_roofline.device_spec("a100_80gb", "", "")
    truth = KernelEfficiency(gemm=0.7, memory=0.6, device_s_per_kernel=3e-6)
    rows = synthetic_rows(device, truth)
    fitted = fit_roofline.fit_kernels(rows, device)
    assert fitted.gemm == pytest.approx(0.7, abs=0.02) and fitted.memory == pytest.approx(0.6, abs=0.02)
    assert fitted.device_s_per_kernel == pytest.approx(3e-6, rel=0.3)
    assert max(fit_roofline.kernel_percent_errors(rows, fitted, device)) < 3
