"""`ddlsim.simulate` takes every shipped option of the groups it reads (fabric, collective, device,
compute) by name, as the command line does, and prices it as the component built from the name
(`ddlsim.core.registry.build`); ``collective="best_no_direct"`` (a YAML variant) among them."""

from __future__ import annotations

import pytest

import ddlsim
from ddlsim.compute.options import build_compute
from ddlsim.core.errors import InfeasibleError
from ddlsim.core.registry import build, option_names
from tests.capture.programs import fsdp_tp_mlp

DEVICE = "h100_sxm"  # simulate's default device
CASES = [(group, option) for group in ("fabric", "collective", "device", "compute") for option in option_names(group)]


@pytest.fixture(scope="module")
def program():
    return ddlsim.capture(fsdp_tp_mlp, (2, 4), ("dp", "tp"))


def _built(group: str, option: str):
    return build_compute(option, build("device", DEVICE)) if group == "compute" else build(group, option)


@pytest.mark.parametrize(("group", "option"), CASES, ids=[f"{g}={o}" for g, o in CASES])
def test_simulate_takes_every_option_by_name_as_its_built_component(program, group, option):
    try:
        by_name = ddlsim.simulate(program, **{group: option})
    except InfeasibleError:  # built, and says why this program cannot run on it (rampx off RAMP, ...)
        with pytest.raises(InfeasibleError):
            ddlsim.simulate(program, **{group: _built(group, option)})
        return
    assert by_name.iteration_time_s > 0
    assert ddlsim.simulate(program, **{group: _built(group, option)}).row() == by_name.row()


def test_simulate_takes_best_no_direct(program):
    result = ddlsim.simulate(program, fabric="superpod", collective="best_no_direct")
    same = ddlsim.simulate(program, fabric="superpod", collective={"name": "best", "exclude": ["direct"]})
    assert result.iteration_time_s > 0 and result.row() == same.row()
