"""ddlsim.compute.fit_roofline: recovers known factors, and never fits on the shapes it reports."""


import pytest

from ddlsim.compute import fit_roofline
from ddlsim.compute.profile_file import ProfileRow
from ddlsim.core.types import Phase
from ddlsim.core.work import ShardSignature


def synthetic_rows(device, flop_efficiency, memory_efficiency, overhead_s):
    rows = []
    for d_model in (256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096):
        for batch in (1, 2, 4, 8):
            signature = ShardSignature("megatron_layer", (("d_model", d_model),), batch, "fp16", True)
            flop, memory_bytes = 24.0 * batch * 1024 * d_model**2, 12.0 * d_model**2 + 40.0 * batch * 1024 * d_model
            time_s = max(flop / (device.peak("fp16") * flop_efficiency),
                         memory_bytes / (device.memory_bandwidth_bytes_per_s * memory_efficiency)) + overhead_s
            rows.append(ProfileRow(signature, Phase.FORWARD, "GPU", time_s, flop, memory_bytes, 10))
    return rows


def test_fit_recovers_known_efficiencies():
    device = fit_roofline.device_spec("h100_sxm", "", "")
    rows = synthetic_rows(device, 0.6, 0.5, 2e-5)
    fit = fit_roofline.fit_class(rows, device)
    assert fit.flop == pytest.approx(0.6, rel=0.06) and fit.overhead_s == pytest.approx(2e-5, rel=0.3)
    errors = fit_roofline.percent_errors(rows, {"gemm": fit}, fit_roofline.defaults_roofline(device))
    assert max(errors) < 10


def test_held_out_shapes_are_wholly_held_out():
    device = fit_roofline.device_spec("h100_sxm", "", "")
    rows = synthetic_rows(device, 0.6, 0.5, 0.0)
    held = fit_roofline.held_out_shapes(rows, 3)
    fitted = {fit_roofline.shape_key(r) for r in rows} - held
    assert len(held) == 3 and len(fitted) == 6
    assert all(len({r.signature.local_batch for r in rows if fit_roofline.shape_key(r) == key}) == 4 for key in held)
