"""Bad input: one line naming the op, module or key and what to do; no process group left behind
(the autouse fixture of conftest.py checks that after every test)."""

from __future__ import annotations

import pytest
import torch
from torch import nn

import ddlsim
from ddlsim.core.errors import ConfigError, InfeasibleError


@torch.library.custom_op("ddlsim_tests::opaque", mutates_args=())
def opaque(x: torch.Tensor) -> torch.Tensor:
    return 2 * x


class Opaque(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return opaque(self.linear(x))


class Router(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.linear(x)[torch.nonzero(x[:, 0] > 0).squeeze(1)]


def program_of(module_class):
    def build(mesh):
        module = module_class()

        def step():
            module(torch.randn(4, 8)).sum().backward()

        return step

    return build


def failing_build(mesh):
    raise KeyError("no layer named blocks.9")


def _one_line(error: BaseException) -> str:
    text = str(error)
    assert "\n" not in text
    return text


def test_a_build_function_that_raises():
    with pytest.raises(ConfigError) as caught:
        ddlsim.capture(failing_build, (4,), ("dp",))
    text = _one_line(caught.value)
    assert "KeyError" in text and "blocks.9" in text and "test_errors.py" in text


def test_an_op_without_a_fake_implementation():
    with pytest.raises(InfeasibleError) as caught:
        ddlsim.capture(program_of(Opaque), (4,), ("dp",))
    text = _one_line(caught.value)
    assert "ddlsim_tests.opaque" in text and "module Opaque" in text and "register_fake" in text


def test_a_data_dependent_shape():
    with pytest.raises(InfeasibleError) as caught:
        ddlsim.capture(program_of(Router), (4,), ("dp",))
    text = _one_line(caught.value)
    assert "aten.nonzero" in text and "module Router" in text and "static shapes" in text


def test_a_mesh_larger_than_the_fabric():
    program = ddlsim.capture(program_of(lambda: nn.Linear(8, 8)), (2048,), ("dp",))
    with pytest.raises(InfeasibleError) as caught:
        ddlsim.simulate(program, fabric="vtrain_a100")
    text = _one_line(caught.value)
    assert "2048 ranks" in text and "512 nodes" in text


def test_bad_mesh_and_entry_settings():
    with pytest.raises(ConfigError, match="mesh_dim_names"):
        ddlsim.capture(failing_build, (4, 2), ("dp",))
    with pytest.raises(ConfigError, match="mesh_shape"):
        ddlsim.capture(failing_build, (0,), ("dp",))
    with pytest.raises(ConfigError, match="entry"):
        ddlsim.capture("examples.no_such_module:build", (4,), ("dp",))
