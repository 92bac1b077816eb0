"""Long-form results (issue 35, item 4): ``collectives.csv`` and ``collectives.parquet`` beside
``results.csv``, one row per run x collective, written by a run and a sweep, and read and written
back unchanged by ``ddlsim-report``."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest

import ddlsim
from ddlsim.app.cli import main
from ddlsim.report.command import main as report_main
from ddlsim.report.results import read_collectives

GPT_PP4 = ["experiment=single", "model=gpt", "model.layers=8", "model.d_model=512", "model.heads=8",
           "model.seq_len=256", "model.global_batch=16", "parallel.tensor=2", "parallel.data=2", "parallel.pipeline=4",
           "device=h100_sxm"]
COLUMNS = ["collective", "op", "algorithm", "calls", "group_size", "size_bytes", "time_s", "latency_s", "transfer_s",
           "reduction_s", "exposed_s", "alone_s"]


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory) -> Path:
    directory = tmp_path_factory.mktemp("run")
    assert main([*GPT_PP4, f"hydra.run.dir={directory}"]) == 0
    return directory


def test_a_run_writes_one_row_per_collective_beside_its_wide_row(run_dir):
    wide = pd.read_csv(run_dir / "results.csv")
    long = read_collectives(run_dir / "collectives.csv")
    assert len(wide) == 1 and list(long.columns[-len(COLUMNS):]) == COLUMNS
    assert list(long.columns[:3]) == ["run_id", "fabric", "model"] and set(long["run_id"]) == {0}
    assert long["collective"].is_unique and not long[COLUMNS].isna().any().any()  # nothing padded
    for item in long.itertuples():  # the wide summary columns are still there, and agree
        prefix = f"comm_{item.collective}"
        assert wide.loc[0, f"{prefix}_time_s"] == item.time_s and wide.loc[0, f"{prefix}_calls"] == item.calls
        assert wide.loc[0, f"{prefix}_latency_s"] == item.latency_s
        assert wide.loc[0, f"{prefix}_compute_s"] == item.reduction_s
        assert wide.loc[0, f"{prefix}_group_size"] == item.group_size
    assert long["time_s"].sum() == pytest.approx(wide.loc[0, "comm_time_s"], rel=1e-12)
    # no overlap: every collective is exposed for its whole time, and together they are the exposed time
    assert (long["exposed_s"] == long["time_s"]).all() and (long["alone_s"] == long["time_s"]).all()
    assert long["exposed_s"].sum() == pytest.approx(wide.loc[0, "exposed_comm_time_s"], rel=1e-12)
    gradient = long.set_index("collective").loc["dp_gradient_all_reduce"]
    assert gradient["size_bytes"] > 0 and gradient["group_size"] == 2 and gradient["op"] == "all_reduce"
    parquet = pd.read_parquet(run_dir / "collectives.parquet")
    pd.testing.assert_frame_equal(parquet[COLUMNS], long[COLUMNS], check_dtype=False)  # CSV reads "" as NaN


def test_the_exposed_time_of_each_collective_is_what_compute_does_not_cover():
    base = ["experiment=single", "model=gpt", "model.layers=4", "model.d_model=256", "model.heads=4",
            "model.seq_len=128", "model.global_batch=8", "parallel.data=4", "device=h100_sxm", "fabric=superpod"]
    for overlap in ("none", "dp_backward"):
        result = ddlsim.run([*base, f"training.overlap={overlap}", "training.bucket_size=1MiB"])
        long, row = pd.DataFrame(result.collectives), result.rows[0]
        assert not long["exposed_s"].isna().any()
        assert (long["exposed_s"] <= long["time_s"] * (1 + 1e-12)).all() and (long["exposed_s"] >= 0).all()
        # collectives may overlap each other, so each one's exposure adds up to at least the iteration's
        assert long["exposed_s"].sum() >= row["exposed_comm_time_s"] * (1 - 1e-9)
        if overlap == "none":
            assert long["exposed_s"].tolist() == pytest.approx(long["time_s"].tolist(), rel=1e-12)
        else:
            assert row["hidden_comm_time_s"] > 0 and (long["exposed_s"] < long["time_s"]).any()


def test_ddlsim_report_reads_both_and_writes_collectives_back_unchanged(run_dir, tmp_path, capsys):
    out = tmp_path / "out"
    assert report_main([str(run_dir), "--out", str(out), "--no-plots"]) == 0
    assert "collective rows of" in capsys.readouterr().out
    assert (out / "collectives.csv").read_bytes() == (run_dir / "collectives.csv").read_bytes()
    pd.testing.assert_frame_equal(pd.read_parquet(out / "collectives.parquet"),
                                  pd.read_parquet(run_dir / "collectives.parquet"))
    again = tmp_path / "again"  # from the results file: the collectives beside it come along
    assert report_main([str(run_dir / "results.csv"), "--out", str(again), "--no-plots"]) == 0
    assert (again / "collectives.csv").read_bytes() == (run_dir / "collectives.csv").read_bytes()


def test_a_sweep_gathers_its_jobs_collectives_and_the_report_round_trips_them(tmp_path, capsys):
    sweep = tmp_path / "sweep"
    assert main(["-m", "experiment=single", "fabric=ideal,superpod", f"hydra.sweep.dir={sweep}"]) == 0
    wide, long = pd.read_csv(sweep / "results.csv"), read_collectives(sweep / "collectives.csv")
    assert list(long["job"].unique()) == [0, 1] and list(long.columns[:2]) == ["job", "run_id"]
    for job, rows in long.groupby("job"):
        assert rows["fabric"].nunique() == 1
        assert rows["time_s"].sum() == pytest.approx(wide.loc[wide["job"] == job, "comm_time_s"].item(), rel=1e-12)
    for job in (0, 1):  # each job's own file was verified with its rows
        assert len(read_collectives(sweep / str(job) / "collectives.csv")) == int((long["job"] == job).sum())
    before = (sweep / "collectives.csv").read_bytes()
    assert report_main([str(sweep), "--no-plots"]) == 0
    assert (sweep / "collectives.csv").read_bytes() == before
    assert not math.isnan(long["exposed_s"].sum())
