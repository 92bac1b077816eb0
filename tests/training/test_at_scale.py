"""At-scale costs (issue 32): interference, stragglers and framework work, each with a switch, and
off giving today's numbers bit for bit; failures in time-to-train."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

import ddlsim
from ddlsim.training.at_scale.framework import framework_s
from ddlsim.training.at_scale.interference import NCCL_CHANNELS, channels_of, slowdown_of
from ddlsim.training.at_scale.stragglers import SPEED_SIGMA, expected_max_of_normals, straggler_s

GPT = ["experiment=single", "model=gpt", "model.layers=8", "model.global_batch=64", "parallel.tensor=2",
       "parallel.data=2", "parallel.pipeline=4", "device=h100_sxm", "fabric=superpod", "training.overlap=dp_backward"]
ON = ["training.at_scale.interference=true", "training.at_scale.stragglers=true", "training.at_scale.framework=true"]


@pytest.fixture(scope="module")
def rows() -> dict[str, dict]:
    session = ddlsim.Session(GPT)
    return {"default": session.run([]).rows[0],
            "off": session.run(["training.at_scale.interference=false", "training.at_scale.stragglers=false",
                                "training.at_scale.framework=false"]).rows[0],
            "on": session.run(ON).rows[0],
            **{name: session.run([f"training.at_scale.{name}=true"]).rows[0]
               for name in ("interference", "stragglers", "framework")}}


def test_switched_off_the_costs_are_zero_and_the_numbers_todays(rows) -> None:
    default, off = rows["default"], rows["off"]
    for column in ("interference_s", "straggler_s", "framework_s"):
        assert default[column] == 0.0
    assert default["goodput"] == 1.0
    for column in ("iteration_time_s", "compute_time_s", "exposed_comm_time_s", "bubble_time_s", "mfu", "tokens_per_s"):
        assert off[column] == default[column]  # bit for bit


def test_each_cost_adds_its_own_seconds(rows) -> None:
    default, on = rows["default"], rows["on"]
    for name, column in (("interference", "interference_s"), ("stragglers", "straggler_s"),
                         ("framework", "framework_s")):
        alone = rows[name]
        assert alone[column] > 0
        assert alone["iteration_time_s"] == pytest.approx(default["iteration_time_s"] + alone[column], rel=1e-12)
    total = on["interference_s"] + on["straggler_s"] + on["framework_s"]
    assert on["iteration_time_s"] == pytest.approx(default["iteration_time_s"] + total, rel=1e-12)
    assert on["mfu"] < default["mfu"] and on["tokens_per_s"] < default["tokens_per_s"]


def test_the_interference_follows_nccls_channels() -> None:
    assert channels_of("all_reduce", 1 << 30, 8) == NCCL_CHANNELS  # a large ring holds every channel
    assert channels_of("all_reduce", 64 << 10, 8) == 1.0  # a small one, one
    assert channels_of("all_reduce", 3 << 20, 8) == pytest.approx(NCCL_CHANNELS / 2)
    assert channels_of("send_recv", 1 << 30, 2) == 2  # a peer's channels
    assert slowdown_of("all_gather", 1 << 30, 8, 132) == pytest.approx(24 / 132)  # H100: 18 %
    assert slowdown_of("all_gather", 1 << 30, 8, 0) == 0.0


def test_stragglers_grow_with_the_order_statistics_of_the_group() -> None:
    assert expected_max_of_normals(1) == 0.0
    assert expected_max_of_normals(2) == pytest.approx(1 / math.sqrt(math.pi), rel=1e-9)
    assert expected_max_of_normals(8) == pytest.approx(1.4236, abs=1e-4)  # the tabulated value
    assert 3.9 < expected_max_of_normals(16384) < 4.05
    costs = [straggler_s(10.0, gpus) for gpus in (8, 64, 512, 4096, 32768)]
    assert costs == sorted(costs) and costs[0] == pytest.approx(10.0 * SPEED_SIGMA * 1.4236, rel=1e-4)


def test_framework_work_by_hand() -> None:
    class Device:
        name = "h100_sxm"
        memory_bandwidth_bytes_per_s = 3.35e12

    plan = {"params_per_gpu": 10**9, "zero_stage": 0, "dp_degree": 4, "precision": "bf16", "micro_batches": 2,
            "micro_batch": 1, "seq_len": 4096}
    zero_and_clip = 10**9 * (4 + 8) / (3.35e12 * 0.8)
    tokens = 2 * 8 * 2 * 4096 / 64e9
    assert framework_s(plan, Device()) == pytest.approx(zero_and_clip + tokens, rel=1e-12)
    fp16 = framework_s({**plan, "precision": "fp16"}, Device())
    assert fp16 == pytest.approx(zero_and_clip + tokens + 10**9 * 8 / (3.35e12 * 0.8), rel=1e-12)
    assert framework_s({"params_per_gpu": 0}, Device()) == 0.0


def test_failures_turn_training_time_into_wall_time(tmp_path) -> None:
    row = ddlsim.run([*GPT, "model.num_steps=1000", "training.failures.enabled=true",
                      "training.failures.rate_per_gpu_hour=0.01", "training.failures.restart_time=5min"]).rows[0]
    assert 0 < row["goodput"] < 1
    assert row["time_to_accuracy_s"] == pytest.approx(1000 * row["iteration_time_s"] / row["goodput"], rel=1e-12)
    assert row["failure_free_time_to_accuracy_s"] == pytest.approx(1000 * row["iteration_time_s"], rel=1e-12)
    assert row["mtbf_s"] == pytest.approx(3600 / (0.01 * 16))


def test_the_timeline_shows_the_costs(tmp_path) -> None:
    row = ddlsim.run([*GPT, *ON, "training.trace=true"], output_dir=tmp_path).rows[0]
    trace = json.loads(Path(row["trace_file"]).read_text())
    bands = {event["name"]: event["dur"] for event in trace["traceEvents"] if event.get("cat") == "at_scale"}
    assert bands == pytest.approx({"interference": row["interference_s"] * 1e6, "straggler": row["straggler_s"] * 1e6,
                                   "framework": row["framework_s"] * 1e6})
    assert trace["otherData"]["iteration_time_s"] == pytest.approx(row["iteration_time_s"], rel=1e-12)


def test_bad_switches_are_one_line_errors() -> None:
    with pytest.raises(ddlsim.ConfigError, match=r"training\.at_scale\.speed_sigma"):
        ddlsim.run([*GPT, "training.at_scale.speed_sigma=2"])
    with pytest.raises(ddlsim.ConfigError, match=r"training\.failures\.rate_per_gpu_hour"):
        ddlsim.run([*GPT, "training.failures.rate_per_gpu_hour=-1"])
