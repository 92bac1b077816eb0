"""Errors a Python caller can catch (issue 35, item 2) through `ddlsim.capture` and `ddlsim.simulate`:
input of the wrong kind raises a one-line `DdlsimError` naming the argument, never a TypeError,
ValueError or AttributeError from deep inside."""

from __future__ import annotations

import pytest
import torch

import ddlsim
from ddlsim.core.errors import ConfigError, DdlsimError


def _linear_step(mesh):
    module = torch.nn.Linear(4, 4)

    def step():
        module(torch.randn(2, 4)).sum().backward()

    return step


@pytest.fixture(scope="module")
def program():
    return ddlsim.capture(_linear_step, (2,), ("dp",))


SIMULATE_BAD = {
    "unknown fabric": {"fabric": "nosuch"},
    "typo key of a fabric": {"fabric": {"name": "ideal", "bandwith": "1Gbps"}},
    "fabric of a wrong type": {"fabric": 3},
    "bad fabric value": {"fabric": {"name": "ideal", "bandwidth": "fast"}},
    "fabric without a name": {"fabric": {"bandwidth": "1Gbps"}},
    "unknown device": {"device": "nosuch"},
    "device None": {"device": None},
    "unknown collective": {"collective": "nosuch"},
    "collective of a wrong type": {"collective": ["ring"]},
    "unknown compute": {"compute": "nosuch"},
    "compute of a wrong type": {"compute": 3},
    "compute list": {"compute": ["roofline"]},
    "contention not a bool": {"contention": "yes"},
}


@pytest.mark.parametrize("arguments", SIMULATE_BAD.values(), ids=SIMULATE_BAD.keys())
def test_simulate_refuses_bad_arguments_with_a_ddlsim_error(program, arguments):
    with pytest.raises(DdlsimError) as caught:
        ddlsim.simulate(program, **arguments)
    assert "\n" not in str(caught.value)
    assert str(caught.value).startswith(next(iter(arguments)))


@pytest.mark.parametrize("given", [3, None, ["program.parquet"]], ids=["int", "None", "list"])
def test_simulate_refuses_a_program_of_the_wrong_kind(given):
    with pytest.raises(ConfigError, match="^program = .*must be a CapturedProgram"):
        ddlsim.simulate(given)


def test_simulate_refuses_a_missing_capture_file(tmp_path):
    with pytest.raises(ConfigError, match="^capture = .*no such file"):
        ddlsim.simulate(tmp_path / "missing.parquet")


CAPTURE_BAD = {
    "mesh_shape of strings": ((_linear_step, ("a",), ("dp",)), "mesh_shape"),
    "mesh_shape an int": ((_linear_step, 2, ("dp",)), "mesh_shape"),
    "mesh_shape of floats": ((_linear_step, (2.5,), ("dp",)), "mesh_shape"),
    "mesh_shape zero": ((_linear_step, (0,), ("dp",)), "mesh_shape"),
    "mesh_dim_names a string": ((_linear_step, (2,), "dp"), "mesh_dim_names"),
    "mesh_dim_names too many": ((_linear_step, (2,), ("dp", "tp")), "mesh_dim_names"),
    "build not callable": ((3, (2,), ("dp",)), "build"),
    "entry not importable": (("nosuch_module_xyz:build", (2,), ("dp",)), "entry"),
}


@pytest.mark.parametrize(("arguments", "key"), CAPTURE_BAD.values(), ids=CAPTURE_BAD.keys())
def test_capture_refuses_bad_arguments_with_a_ddlsim_error(arguments, key):
    with pytest.raises(ConfigError) as caught:
        ddlsim.capture(*arguments)
    assert str(caught.value).startswith(key) and "\n" not in str(caught.value)


@pytest.mark.parametrize("ranks", [["a"], 1, [5]], ids=["strings", "int", "out of range"])
def test_capture_refuses_bad_ranks(ranks):
    with pytest.raises(ConfigError, match="^ranks = "):
        ddlsim.capture(_linear_step, (2,), ("dp",), ranks=ranks)
