"""`ddlsim.Session` gives what `ddlsim.run` gives on the same overrides, reusing compositions and objects."""


import pytest
from row_checks import same_rows

import ddlsim
from ddlsim.core.errors import ConfigError

BASE = ["experiment=single"]
CASES = [
    ["model.target_loss=2.5"],
    ["model.target_loss=2.2"],
    ["fabric=superpod", "model.target_loss=2.2"],
    ["fabric=superpod", "model.target_loss=2.0", "training.overlap=dp_backward"],
    ["fabric=superpod", "model.target_loss=2.0"],  # training.overlap back at its default
    ["task=collective", "task.sizes=[1MB,1GB]"],
    ["model.target_loss=2.5"],  # again, after other configurations
]


def test_session_rows_equal_ddlsim_run():
    session = ddlsim.Session(BASE)
    for overrides in CASES:
        same_rows(session.run(overrides).rows, ddlsim.run([*BASE, *overrides]).rows)
    assert len(session._bases) == 3  # one composition per set of group choices


def test_session_reuses_unchanged_objects_and_rebuilds_changed_ones():
    session = ddlsim.Session(BASE)
    first = session.components(["model.target_loss=2.5"])
    second = session.components(["model.target_loss=2.0"])
    assert second.fabric is first.fabric and second.device is first.device and second.task is first.task
    assert second.model is not first.model
    assert session.components(["fabric.bandwidth=100Gbps"]).fabric is not first.fabric


def test_session_config_equals_compose():
    session = ddlsim.Session(BASE)
    overrides = ["fabric=superpod", "model.target_loss=2.0"]
    assert session.config(overrides) == ddlsim.compose([*BASE, *overrides])


def test_a_bad_value_raises_what_ddlsim_run_raises():
    session = ddlsim.Session(BASE)
    session.run(["model.target_loss=2.5"])
    with pytest.raises(ConfigError) as expected:
        ddlsim.run([*BASE, "fabric=superpod", "fabric.nic_bandwidth=fast"])
    with pytest.raises(ConfigError) as got:
        session.run(["fabric=superpod", "fabric.nic_bandwidth=fast"])
    assert str(got.value) == str(expected.value)
    assert "fabric.nic_bandwidth" in str(got.value)


@pytest.mark.parametrize("overrides", [["fabric.bandwidth=fast"], ["parallel.tensor=3"]])
def test_a_point_that_cannot_run_is_the_row_ddlsim_run_point_gives(overrides):
    session = ddlsim.Session(BASE)
    session.run(["model.target_loss=2.5"])
    row = session.run_point(overrides).rows
    assert row == ddlsim.run_point([*BASE, *overrides]).rows
    assert row[0]["status"].startswith(("invalid: ", "infeasible: "))


def test_a_sweep_value_is_refused():
    with pytest.raises(ConfigError, match="model.target_loss"):
        ddlsim.Session(BASE).run(["model.target_loss=2.5,2.0"])
