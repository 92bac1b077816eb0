"""Errors name what the user set: the key that broke a rule, the path that was given."""

from __future__ import annotations

import json
import logging
import subprocess
import sys

import pytest

import ddlsim
from ddlsim.core.errors import ConfigError


@pytest.mark.parametrize(("key", "value"), [("pipeline", 2), ("tensor", 4)])
def test_a_dlrm_with_layer_parallelism_names_the_key_that_was_set(key, value):
    with pytest.raises(ConfigError) as error:
        ddlsim.run(["experiment=single", "model=dlrm", f"parallel.{key}={value}"])
    assert str(error.value).startswith(f"parallel.{key} = {value}: ")


def test_an_unsupported_hugging_face_config_names_the_path_given(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "t5", "d_model": 64, "num_heads": 2,
                                                      "num_layers": 2, "vocab_size": 100}))
    with pytest.raises(ConfigError) as error:
        ddlsim.run(["experiment=single", "model=hf", f"model.config={tmp_path}"])
    assert str(tmp_path) in str(error.value) and "model type 't5' is not supported" in str(error.value)


def test_importing_torchrec_leaves_the_root_logger_alone():
    """fbgemm_gpu would add a root handler (every log line of `ddlsim --info` printed twice)."""
    code = ("import logging; import ddlsim.workload.torchrec_names, ddlsim.app.runner; "
            "root = logging.getLogger(); print(len(root.handlers), root.level)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["0", str(logging.WARNING)]


def test_a_config_file_path_reads_that_file_not_its_folder(tmp_path):
    """A path to a .json file is read itself; a folder's config.json must not be picked up instead."""
    from ddlsim.workload.transformer.hf_config import load_config

    (tmp_path / "config.json").write_text(json.dumps({"model_type": "t5"}))
    given = tmp_path / "mistral_small.json"
    given.write_text(json.dumps({"model_type": "mistral", "hidden_size": 256, "num_attention_heads": 4,
                                 "num_hidden_layers": 2, "intermediate_size": 512, "vocab_size": 1000,
                                 "max_position_embeddings": 512}))
    config = load_config(str(given))
    assert (config["model_type"], config["hidden_size"], config["num_hidden_layers"]) == ("mistral", 256, 2)


@pytest.mark.parametrize(("document", "reason"), [({"model_type": "no_such_family"}, "cannot build model type"),
                                                  ({"hidden_size": 8}, "has no `model_type` key"),
                                                  ("{not json", "not a readable JSON config")])
def test_a_bad_config_file_is_one_config_error_naming_the_path(tmp_path, document, reason):
    from ddlsim.workload.transformer.hf_config import load_config

    given = tmp_path / "bad.json"
    given.write_text(document if isinstance(document, str) else json.dumps(document))
    with pytest.raises(ConfigError) as error:
        load_config(str(given))
    message = str(error.value)
    assert message.startswith(f"config = '{given}'") and reason in message and "\n" not in message
