"""Compose once per sweep: each job's config equals Hydra's full composition of it, and a bad value
still stops the sweep before any job runs, naming the override."""

import pytest
from hydra import initialize_config_dir
from hydra.core.global_hydra import GlobalHydra
from hydra.errors import ConfigCompositionException
from hydra.types import RunMode
from omegaconf import OmegaConf

from ddlsim.app.cli import main
from ddlsim.app.config_store import config_dir, register_configs
from ddlsim.app.sweep.callbacks import expand_sweep
from ddlsim.app.sweep.compose import ComposeOnceLoader

SWEEP = ["experiment=single", "fabric=ideal,superpod", "model.target_loss=2.5,2.0", "++task.on_infeasible=row"]


@pytest.fixture
def clean_hydra():
    yield
    assert not GlobalHydra.instance().is_initialized()


@pytest.fixture
def hydra_loader():
    register_configs()
    with initialize_config_dir(config_dir=str(config_dir()), version_base="1.3", job_name="ddlsim"):
        yield GlobalHydra.instance().config_loader()


def as_plain(config):
    return OmegaConf.to_container(config, resolve=False)


def test_every_jobs_config_equals_hydras_own_composition(hydra_loader):
    master = hydra_loader.load_configuration("config", SWEEP, run_mode=RunMode.MULTIRUN)
    jobs = expand_sweep(SWEEP)
    assert len(jobs) == 4
    fast = ComposeOnceLoader(hydra_loader)
    for job in jobs:
        expected = hydra_loader.load_sweep_config(master, list(job))
        checked = fast.load_sweep_config(master, list(job))  # the sweeper's check
        launched = fast.load_sweep_config(master, list(job))  # the launcher's call: the same config
        assert launched is checked
        assert as_plain(checked) == as_plain(expected)
        assert list(checked.hydra.overrides.task) == list(job)
    assert len(fast._bases) == 2  # one composition per fabric, not per job


def test_a_bad_value_fails_as_a_full_composition_does(hydra_loader):
    master = hydra_loader.load_configuration("config", ["experiment=single", "seed=1,abc"], run_mode=RunMode.MULTIRUN)
    fast = ComposeOnceLoader(hydra_loader)
    fast.load_sweep_config(master, ["experiment=single", "seed=1"])
    with pytest.raises(ConfigCompositionException) as fast_error:
        fast.load_sweep_config(master, ["experiment=single", "seed=abc"])
    with pytest.raises(ConfigCompositionException) as hydra_error:
        hydra_loader.load_sweep_config(master, ["experiment=single", "seed=abc"])
    assert str(fast_error.value.__cause__) == str(hydra_error.value.__cause__)


def test_a_sweep_with_a_bad_value_stops_before_any_job(tmp_path, capsys, clean_hydra):
    status = main(["-m", "experiment=single", "task=collective", "seed=1,abc", f"hydra.sweep.dir={tmp_path}"])
    assert status == 2
    assert "ddlsim: error: seed = 'abc'" in capsys.readouterr().err
    assert not list(tmp_path.glob("*/results.csv"))
