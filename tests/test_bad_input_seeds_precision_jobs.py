"""Issue 35, item 1: seeds, precisions and job counts are checked before any work or file, each
bad one ending in one line that names the key; ``task.mix={...}`` works as docs/jobs.md writes it."""

from __future__ import annotations

import time

import pytest
from hydra.core.global_hydra import GlobalHydra

import ddlsim
from ddlsim.app.cli import EXIT_INFEASIBLE, EXIT_INVALID, main
from ddlsim.core.errors import ConfigError, InfeasibleError
from ddlsim.core.seeds import SEED_LIMIT, check_seed

SINGLE = ("experiment=single",)
CANDLE = ("fabric=topoopt_fat_tree_oversub", "+task.model_overrides={num_servers: 8, sizes: sec5_6}")
SEED_RULE = f"must be an integer in [0, {SEED_LIMIT - 1}]"


def run_cli(capsys, tmp_path, overrides):
    capsys.readouterr()
    status = main([*SINGLE, *overrides, f"hydra.run.dir={tmp_path}"])
    lines = capsys.readouterr().err.strip().splitlines()
    assert not GlobalHydra.instance().is_initialized()
    assert not (tmp_path / "results.csv").exists() and not (tmp_path / "results.parquet").exists()
    return status, lines


@pytest.mark.parametrize(("overrides", "start"), [
    (["task=jobs", "task.seed=-1"], f"ddlsim: error: task.seed = -1: {SEED_RULE}"),
    (["task=jobs", f"task.seed={SEED_LIMIT}"], f"ddlsim: error: task.seed = {SEED_LIMIT}: {SEED_RULE}"),
    (["task=jobs", "task.seed=99999999999999999999"], "ddlsim: error: task.seed = 99999999999999999999: "),
    (["seed=-3"], f"ddlsim: error: seed = -3: {SEED_RULE}"),
    (["fabric=expander", "fabric.seed=-2"], f"ddlsim: error: fabric.seed = -2: {SEED_RULE}"),
    (["task=topoopt_jobs", f"task.seed={SEED_LIMIT + 5}"], f"ddlsim: error: task.seed = {SEED_LIMIT + 5}: "),
], ids=["jobs_negative", "jobs_int64", "jobs_huge", "root_negative", "expander_negative", "topoopt_jobs_int64"])
def test_a_seed_outside_int64_is_one_line_naming_its_key_and_writes_nothing(overrides, start, tmp_path, capsys):
    status, lines = run_cli(capsys, tmp_path, overrides)
    assert status == EXIT_INVALID and len(lines) == 1, lines
    assert lines[0].startswith(start), lines


def test_the_largest_int64_seed_runs_and_is_written_to_parquet(tmp_path):
    assert check_seed(SEED_LIMIT - 1) == SEED_LIMIT - 1
    status = main([*SINGLE, *CANDLE, "task=jobs", "task.jobs=[topoopt_candle]", f"task.seed={SEED_LIMIT - 1}",
                   "task.iterations=1", f"hydra.run.dir={tmp_path}"])
    assert status == 0
    import pandas as pd

    assert pd.read_parquet(tmp_path / "results.parquet")["seed"].tolist() == [SEED_LIMIT - 1]
    with pytest.raises(ConfigError, match="seed = True"):
        check_seed(True)


@pytest.mark.parametrize("device", ["a100_80gb", "a100_40gb"])
def test_fp8_on_an_a100_is_one_line_naming_model_precision(device, tmp_path, capsys):
    status, lines = run_cli(capsys, tmp_path, [f"device={device}", "model.precision=fp8"])
    assert status == EXIT_INVALID and len(lines) == 1, lines
    assert lines[0].startswith(f"ddlsim: error: model.precision = 'fp8': device {device} (A100-SXM4-"), lines
    assert "has no fp8 tensor cores; choose one of fp32, tf32, fp16, bf16" in lines[0], lines


def test_fp8_runs_where_the_device_has_it():
    h100 = ddlsim.run([*SINGLE, "device=h100_sxm", "model.precision=fp8"]).rows[0]
    assert h100["precision"] == "fp8" and h100["iteration_time_s"] > 0
    given = ddlsim.run([*SINGLE, "device=a100_80gb", "model.precision=fp8", "device.peak_fp8=624TFLOPS"]).rows[0]
    assert given["precision"] == "fp8"  # a rate given in the config makes fp8 the device's
    with pytest.raises(ConfigError, match=r"^model\.precision = 'fp8': device a100_80gb"):
        ddlsim.build_components([*SINGLE, "device=a100_80gb", "model.precision=fp8"])


@pytest.mark.parametrize(("overrides", "start"), [
    (["task.num_jobs=1000000"], "ddlsim: infeasible: task.num_jobs = 1000000: 1,000,000 jobs do not fit on the "
                                "65,536 nodes of fabric ideal: each job takes at least one slot of 1 node, so at "
                                "most 65,536 jobs fit"),
    ([*CANDLE, "task.jobs=[topoopt_bert, {model: topoopt_candle, count: 1000000}]"],
     "ddlsim: infeasible: task.jobs[1].count = 1000000: 1,000,001 jobs do not fit on the 512 nodes of fabric "
     "topoopt_fat_tree_oversub: each job takes at least one slot of 4 nodes, so at most 128 jobs fit"),
    ([*CANDLE, "task.mix={topoopt_candle: 1}", "task.num_jobs=1000000"],
     "ddlsim: infeasible: task.num_jobs = 1000000: 1,000,000 jobs do not fit on the 512 nodes"),
    (["task.num_jobs=10000"], "ddlsim: infeasible: job 8192 of task.num_jobs (8 ranks, 8 slots of 1 nodes) does "
                              "not fit: 0 of the fabric's 65536 nodes are left free"),
], ids=["num_jobs", "count", "mix", "first_job_that_does_not_fit"])
def test_too_many_jobs_are_refused_before_any_job_is_built(overrides, start, tmp_path, capsys):
    began = time.process_time()
    status, lines = run_cli(capsys, tmp_path, ["task=jobs", *overrides])
    assert time.process_time() - began < 10  # loose: benchmarks/bench_jobs_refusal.py prints the time
    assert status == EXIT_INFEASIBLE and len(lines) == 1, lines
    assert lines[0].startswith(start), lines


def test_too_many_jobs_from_python_are_an_infeasible_error():
    with pytest.raises(InfeasibleError, match=r"^task\.num_jobs = 1000000: "):
        ddlsim.run([*SINGLE, "task=jobs", "task.num_jobs=1000000"])


def test_task_mix_is_set_as_the_docs_write_it(tmp_path, capsys):
    mix = "task.mix={topoopt_candle: 0.5, topoopt_bert: 0.5}"
    rows = ddlsim.run([*SINGLE, *CANDLE, "task=jobs", mix, "task.num_jobs=2", "task.iterations=1"]).rows
    assert [row["model"] for row in rows] == ["topoopt_candle", "topoopt_bert"]
    plus = ddlsim.run([*SINGLE, *CANDLE, "task=jobs", f"+{mix}", "task.num_jobs=2", "task.iterations=1"]).rows
    assert [row["iteration_time_s"] for row in plus] == [row["iteration_time_s"] for row in rows]
    session = ddlsim.Session([*SINGLE, *CANDLE, "task=jobs", "task.num_jobs=2", "task.iterations=1"])
    assert [row["model"] for row in session.run([mix]).rows] == ["topoopt_candle", "topoopt_bert"]
    status, lines = run_cli(capsys, tmp_path, ["task=jobs", "task.mix={topoopt_candle: many}"])
    assert status == EXIT_INVALID and len(lines) == 1 and "task.mix.topoopt_candle" in lines[0], lines
    status, lines = run_cli(capsys, tmp_path, ["task=jobs", "task.mixx={topoopt_candle: 1}"])
    assert status == EXIT_INVALID and len(lines) == 1 and "task.mixx" in lines[0], lines
