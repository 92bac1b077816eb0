"""`model=program` through `ddlsim.run` (the command line's library call): entry or saved capture,
one capture per process for a sweep, the parallel group left alone, trace.json."""

from __future__ import annotations

import json

import pytest

import ddlsim
from ddlsim.capture import CAPTURES
from ddlsim.core.errors import ConfigError

CNN = ["model=program", "model.entry=examples.ddp_cnn:build", "model.mesh_shape=[8]", "model.mesh_dim_names=[dp]",
       "+model.options.width=8", "+model.options.image=32", "+model.options.classes=10"]


@pytest.fixture(autouse=True)
def _fresh_cache():
    CAPTURES.clear()
    yield
    CAPTURES.clear()


def test_entry_runs_and_is_captured_once_per_process(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    first = ddlsim.run([*CNN, "fabric=superpod", f"model.save={tmp_path / 'cnn.parquet'}"]).rows[0]
    second = ddlsim.run([*CNN, "fabric=ramp"]).rows[0]
    assert first["status"] == second["status"] == "ok"
    assert first["workload"] == "ddp_cnn" and first["num_ranks"] == 8 and first["mesh_dp"] == 8
    assert (CAPTURES.misses, CAPTURES.hits) == (1, 1)
    assert first["iteration_time_s"] != second["iteration_time_s"]
    saved = ddlsim.run(["model=program", f"model.capture={tmp_path / 'cnn.parquet'}", "fabric=superpod"]).rows[0]
    assert saved["iteration_time_s"] == first["iteration_time_s"]


def test_the_parallel_group_must_stay_at_its_defaults():
    with pytest.raises(ConfigError, match="parallel.tensor"):
        ddlsim.run([*CNN, "fabric=superpod", "parallel.tensor=4"])


def test_settings_are_checked_before_any_capture():
    with pytest.raises(ConfigError, match="model.entry"):
        ddlsim.run(["model=program", "model.entry=", "fabric=superpod"])
    with pytest.raises(ConfigError, match="model.capture"):
        ddlsim.run(["model=program", "model.capture=no_such_file.parquet", "fabric=superpod"])
    with pytest.raises(ConfigError, match="mesh_dim_names"):
        ddlsim.run(["model=program", "model.entry=examples.ddp_cnn:build", "model.mesh_shape=[8,2]",
                    "model.mesh_dim_names=[dp]"])
    assert CAPTURES.misses == 0


def test_trace_json_of_a_captured_run(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    row = ddlsim.run([*CNN, "fabric=superpod", "training.trace=true"]).rows[0]
    trace = json.loads((tmp_path / "trace.json").read_text())
    assert row["trace_file"] == str(tmp_path / "trace.json")
    collectives = [event for event in trace["traceEvents"] if event.get("cat") == "collective"]
    assert {event["args"]["op"] for event in collectives} == {"all_reduce", "broadcast"}  # buckets, BN buffers
    assert all(event["args"]["size_bytes"] > 0 and event["args"]["algorithm"] for event in collectives)
