"""trace.json: the Chrome trace event format that Perfetto and chrome://tracing read."""

from __future__ import annotations

import json

import ddlsim
from ddlsim.training.trace import TRACE_NAME

REQUIRED = {"X": ("name", "ph", "ts", "dur", "pid", "tid"), "M": ("name", "ph", "pid", "tid", "args")}


def check_trace(trace: dict) -> list[dict]:
    """Every event carries the fields its phase needs, with the right types; returns the X events."""
    assert set(trace) >= {"traceEvents", "displayTimeUnit"}
    events = trace["traceEvents"]
    assert events
    for event in events:
        assert event["ph"] in REQUIRED, event
        for key in REQUIRED[event["ph"]]:
            assert key in event, (key, event)
        assert isinstance(event["pid"], int) and isinstance(event["tid"], int)
    spans = [event for event in events if event["ph"] == "X"]
    for event in spans:
        assert isinstance(event["name"], str) and event["name"]
        assert event["ts"] >= 0 and event["dur"] >= 0
    named = {(event["pid"], event["tid"]) for event in events if event["name"] == "thread_name"}
    assert {(event["pid"], event["tid"]) for event in spans} <= named  # every track has a name
    return spans


def test_analytic_pipelined_run_writes_a_valid_trace(tmp_path, monkeypatch):
    """GPT with 2 pipeline stages: one process per stage, compute and communication tracks,
    collectives with their bytes and algorithm, and the last event ends at the iteration time."""
    monkeypatch.chdir(tmp_path)
    row = ddlsim.run(["experiment=vtrain_a100", "parallel.tensor=2", "parallel.data=2", "parallel.pipeline=2",
                      "parallel.max_gpus=8", "model.layers=4", "model.global_batch=16", "training.trace=true"]).rows[0]
    trace = json.loads((tmp_path / TRACE_NAME).read_text())
    spans = check_trace(trace)
    assert {event["pid"] for event in spans} == {0, 1}
    threads = {event["args"]["name"] for event in trace["traceEvents"] if event["name"] == "thread_name"}
    assert {"stage0", "stage0 (communication)", "stage1", "stage1 (communication)"} <= threads
    collectives = [event for event in spans if event["cat"] == "collective"]
    assert all(event["args"]["size_bytes"] >= 0 and event["args"]["algorithm"] for event in collectives)
    assert {event["args"]["op"] for event in collectives} >= {"all_reduce", "send_recv"}
    end_us = max(event["ts"] + event["dur"] for event in spans)
    assert abs(end_us - 1e6 * row["iteration_time_s"]) <= 1e-6 * end_us
    assert row["trace_file"].endswith(TRACE_NAME)


def test_no_trace_unless_asked(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    row = ddlsim.run(["experiment=vtrain_a100", "parallel.tensor=8", "parallel.data=1", "parallel.max_gpus=8",
                      "model.layers=2", "model.global_batch=8"]).rows[0]
    assert "trace_file" not in row and not (tmp_path / TRACE_NAME).exists()
