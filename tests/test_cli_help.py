"""``ddlsim --help`` prints exactly what Hydra's own ``--help`` prints, without its 4 s of group listing."""

from __future__ import annotations

import sys

import hydra
import pytest
from hydra.core.global_hydra import GlobalHydra
from hydra.core.singleton import Singleton

from ddlsim.app.cli import main
from ddlsim.app.config_store import config_dir
from ddlsim.app.help import help_overrides


def hydra_own_help(capsys, arguments: list[str]) -> str:
    """What `@hydra.main` prints for ``ddlsim <arguments>`` (the slow path `ddlsim.app.help` replaces)."""
    saved_state, saved_argv = Singleton.get_state(), sys.argv
    sys.argv = ["ddlsim", *arguments]
    capsys.readouterr()
    try:
        with pytest.raises(SystemExit) as exit_:
            hydra.main(version_base="1.3", config_path=str(config_dir()), config_name="config")(lambda config: None)()
        assert exit_.value.code == 0
        return capsys.readouterr().out
    finally:
        sys.argv = saved_argv
        if GlobalHydra.instance().is_initialized():
            GlobalHydra.instance().clear()
        Singleton.set_state(saved_state)


def fast_help(capsys, arguments: list[str]) -> str:
    capsys.readouterr()
    assert main(arguments) == 0
    return capsys.readouterr().out


@pytest.mark.parametrize(("arguments", "composed"), [
    (["--help"], "fabric:\n  name: ramp"),
    (["experiment=single", "fabric=superpod", "model=dlrm", "-h"], "fabric:\n  name: superpod"),
])
def test_help_is_hydras_own_text(capsys, arguments, composed):
    assert help_overrides(arguments) is not None  # answered by ddlsim.app.help, not by Hydra
    ours = fast_help(capsys, arguments)
    assert "\nfabric: bcube, " in ours and composed in ours
    assert ours == hydra_own_help(capsys, arguments)


@pytest.mark.parametrize(("arguments", "expected"), [
    (["--help"], []),
    (["fabric=ramp", "-h"], ["fabric=ramp"]),
    (["fabric=ramp"], None),  # no help asked for
    (["--help", "--resolve"], None),  # Hydra's own flags go to Hydra
    (["--hydra-help"], None),
    (["-m", "fabric=ramp,superpod", "--help"], None),
])
def test_only_plain_help_calls_take_the_fast_path(arguments, expected):
    assert help_overrides(arguments) == expected


def test_help_with_a_bad_option_is_one_line(capsys):
    capsys.readouterr()
    assert main(["fabric=nope", "--help"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("ddlsim: error: fabric=nope: no such option in group 'fabric'")
