"""Sweep launchers: joblib runs sweeps in parallel here; SLURM (submitit) and Ray configs compose."""

import importlib.util
import subprocess
import sys

import pandas as pd
import pytest
from hydra import compose, initialize_config_dir
from hydra.utils import instantiate

from ddlsim.app.config_store import config_dir, register_configs


def launcher_config(name: str, *overrides: str):
    register_configs()
    with initialize_config_dir(config_dir=str(config_dir()), version_base="1.3"):
        return compose("config", overrides=[f"hydra/launcher={name}", *overrides], return_hydra_config=True)


def test_slurm_launcher_config_composes_and_builds():
    config = launcher_config("slurm", "hydra.launcher.partition=gpu")
    launcher = config.hydra.launcher
    assert launcher._target_.endswith("submitit_launcher.SlurmLauncher")
    assert launcher.partition == "gpu" and launcher.cpus_per_task == 2 and launcher.timeout_min == 60
    # The plugin accepts every key we set (building it submits nothing).
    built = instantiate(launcher)
    assert built.params["partition"] == "gpu"


def test_ray_launcher_config_composes():
    config = launcher_config("ray_cluster")
    assert config.hydra.launcher._target_ == "hydra_plugins.hydra_ray_launcher.ray_launcher.RayLauncher"
    assert config.hydra.launcher.ray.remote.num_cpus == 1
    if importlib.util.find_spec("hydra_plugins.hydra_ray_launcher") is None:
        pytest.skip("hydra-ray-launcher is not installed; the config composes but cannot be built here")
    instantiate(config.hydra.launcher)


def test_joblib_runs_a_sweep_in_parallel_worker_processes(tmp_path):
    sweep_dir = tmp_path / "sweep"
    command = [sys.executable, "-m", "ddlsim.app.cli", "-m", "hydra/launcher=local_parallel", "hydra.launcher.n_jobs=2",
               "experiment=single", "task=collective", "seed=0,1", f"hydra.sweep.dir={sweep_dir}", "report.plots=false"]
    result = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr
    assert "Joblib.Parallel(n_jobs=2" in result.stderr + result.stdout
    gathered = pd.read_csv(sweep_dir / "results.csv")
    assert gathered["job"].nunique() == 2


@pytest.mark.slow
def test_submitit_local_executor_runs_the_sweep(tmp_path):
    # The SLURM code path with submitit's local executor: jobs are pickled, run in fresh
    # processes, and write their rows into the sweep directory.
    sweep_dir = tmp_path / "sweep"
    command = [sys.executable, "-m", "ddlsim.app.cli", "-m", "hydra/launcher=submitit_local", "experiment=single",
               "task=collective", "seed=0,1", f"hydra.sweep.dir={sweep_dir}", "report.plots=false"]
    result = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stderr
    assert pd.read_csv(sweep_dir / "results.csv")["job"].nunique() == 2
