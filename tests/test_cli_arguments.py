"""The command line works in the forms the docs print: `-m` anywhere, and a model the default
comparison does not sweep runs without `experiment=single`."""

from __future__ import annotations

import pytest

from ddlsim.app.arguments import normalise_arguments
from ddlsim.app.cli import main
from ddlsim.app.config_store import register_configs


@pytest.fixture(autouse=True)
def _configs() -> None:
    register_configs()


@pytest.mark.parametrize(("arguments", "expected"), [
    (["fabric=ramp,superpod", "-m", "training.trace=true"], ["-m", "fabric=ramp,superpod", "training.trace=true"]),
    (["--multirun", "fabric=ramp"], ["--multirun", "fabric=ramp"]),
    (["model=program", "fabric=ramp"], ["experiment=single", "model=program", "fabric=ramp"]),
    (["model=gpt2"], ["experiment=single", "model=gpt2"]),  # a YAML option over the hf schema
    (["model=dlrm", "experiment=ramp_dlrm"], ["model=dlrm", "experiment=ramp_dlrm"]),
    (["model=megatron_gpt"], ["model=megatron_gpt"]),  # a Megatron variant keeps the default comparison
    (["model.target_loss=2.5,1.8"], ["model.target_loss=2.5,1.8"]),
    (["model=no_such_model"], ["model=no_such_model"]),  # left to Hydra's own error
])
def test_arguments_are_normalised(arguments: list[str], expected: list[str]) -> None:
    assert normalise_arguments(arguments) == expected


def test_model_program_runs_without_experiment_single(tmp_path, capsys) -> None:
    status = main(["model=program", "model.entry=examples.ddp_cnn:build", "model.mesh_shape=[4]",
                   "model.mesh_dim_names=[dp]", f"hydra.run.dir={tmp_path}"])
    assert status == 0, capsys.readouterr().err
    assert (tmp_path / "results.csv").is_file()


def test_multirun_flag_after_the_overrides(tmp_path) -> None:
    status = main(["experiment=single", "task=collective", "task.sizes=[1MB]", "fabric=ramp,superpod",
                   "-m", f"hydra.sweep.dir={tmp_path}"])
    assert status == 0
    assert (tmp_path / "results.csv").is_file()
