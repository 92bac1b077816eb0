"""Errors a Python caller can catch (issue 35, item 2): every bad override through `ddlsim.run`,
`ddlsim.compose` and `ddlsim.Session` raises a `ConfigError` whose message is the line the command
prints for it (``ddlsim: error: <line>``), chained to Hydra's or OmegaConf's exception; Hydra's
own exception types never reach the caller. One string is one override."""

from __future__ import annotations

import pytest
from hydra.errors import HydraException
from omegaconf.errors import OmegaConfBaseException

import ddlsim
from ddlsim.app.caller_errors import OverrideError
from ddlsim.app.cli import main
from ddlsim.core.errors import ConfigError, DdlsimError

BASE = ["experiment=single"]
BAD = {
    "typo key": "fabric.nic_bandwith=1Gbps",
    "typo top-level key": "fabrik.bandwidth=1Gbps",
    "unknown root key": "nosuch=3",
    "key the group lacks": "task.sizes=[1GB]",
    "added key no schema has": "+fabric.foo=3",
    "unknown option": "fabric=nosuch",
    "unknown experiment": "experiment=nosuch",
    "wrong type": "model.target_loss=abc",
    "wrong type of a section": "parallel.tensor=abc",
    "wrong type of the root": "seed=x",
    "bad value": "fabric.bandwidth=fast",
    "unparsable value": "model.target_loss=[1,2",
    "no equals sign": "fabric",
    "empty key": "=3",
    "unknown hydra key": "hydra.foo=1",
}


def _cli_line(capsys, override: str, run_dir) -> str:
    assert main([*BASE, override, f"hydra.run.dir={run_dir}"]) == 2
    error = capsys.readouterr().err.strip()
    assert error.startswith("ddlsim: error: ")
    return error.removeprefix("ddlsim: error: ")


def _check_caller_error(error: BaseException) -> None:
    assert isinstance(error, ConfigError), type(error)
    assert "\n" not in str(error)
    if isinstance(error, OverrideError) or error.__cause__ is not None:
        assert isinstance(error.__cause__, (HydraException, OmegaConfBaseException, ValueError))


@pytest.mark.parametrize("override", BAD.values(), ids=BAD.keys())
def test_each_door_raises_the_line_the_command_prints(override, capsys, tmp_path):
    line = _cli_line(capsys, override, tmp_path)
    with pytest.raises(ConfigError) as by_run:
        ddlsim.run([*BASE, override])
    with pytest.raises(ConfigError) as by_session:
        ddlsim.Session(BASE).run([override])
    for caught in (by_run, by_session):
        _check_caller_error(caught.value)
        assert str(caught.value) == line


@pytest.mark.parametrize("override", ["fabric.nic_bandwith=1Gbps", "fabric=nosuch", "model.target_loss=abc", "fabric"])
def test_hydra_exceptions_are_chained_not_raised(override):
    for door in (ddlsim.compose, ddlsim.run, ddlsim.Session(BASE).config, ddlsim.Session(BASE).components):
        with pytest.raises(DdlsimError) as caught:
            door([*BASE, override] if door in (ddlsim.compose, ddlsim.run) else [override])
        assert isinstance(caught.value.__cause__, (HydraException, ValueError))
        assert not isinstance(caught.value.__cause__, DdlsimError)


def test_a_bad_override_does_not_poison_the_session():
    session = ddlsim.Session(BASE)
    good = session.run(["model.target_loss=2.5"]).rows
    for override in BAD.values():
        with pytest.raises(ConfigError):
            session.run([override])
    assert session.run(["model.target_loss=2.5"]).rows == good


def test_one_string_is_one_override():
    expected = ddlsim.Session(BASE).run(["model.target_loss=2.4"]).rows
    assert ddlsim.Session(BASE).run("model.target_loss=2.4").rows == expected
    assert ddlsim.Session("experiment=single").run(["model.target_loss=2.4"]).rows == expected
    assert ddlsim.run("experiment=single").rows == ddlsim.run(BASE).rows
    assert ddlsim.compose("experiment=single") == ddlsim.compose(BASE)


@pytest.mark.parametrize("overrides", [[3], ["fabric=ideal", None], 3.5, {"fabric": "ideal"}.items()],
                         ids=["int item", "None item", "float", "dict items"])
def test_overrides_that_are_not_strings(overrides):
    with pytest.raises(ConfigError, match="^overrides = .*must be a list of overrides"):
        ddlsim.Session(BASE).run(overrides)
    with pytest.raises(ConfigError, match="^overrides = .*must be a list of overrides"):
        ddlsim.compose(overrides)
