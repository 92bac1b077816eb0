"""Without simgrid, the reference says so in one line with the install command (no traceback
from the import machinery); the main package never needs it."""

from __future__ import annotations

import importlib

import pytest

from ddlsim.core.errors import InfeasibleError
from ddlsim.core.registry import FABRICS
from ddlsim.core.types import GroupLayout
from ddlsim.network.contention.flows import FlowJob
from ddlsim.validation import simgrid_reference
from ddlsim.validation.contention_suite import collective


@pytest.fixture
def no_simgrid(monkeypatch):
    real = importlib.import_module

    def refuse(name, *args, **kwargs):
        if name == "simgrid":
            raise ImportError("No module named 'simgrid'")
        return real(name, *args, **kwargs)

    monkeypatch.setattr(simgrid_reference.importlib, "import_module", refuse)


def test_a_missing_simgrid_is_one_line_with_the_install_hint(no_simgrid):
    fabric = FABRICS.make("ideal", num_nodes=8)
    job: FlowJob = collective(fabric, "ring", "all_reduce", GroupLayout(8), 1 << 20)
    assert simgrid_reference.simgrid_available() is False
    with pytest.raises(InfeasibleError, match=r"pip install --no-build-isolation 'pybind11<3' simgrid==4\.1") as error:
        simgrid_reference.reference_end_s(fabric, [job])
    assert "\n" not in str(error.value)
    assert error.value.__cause__ is None
