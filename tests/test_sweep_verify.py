"""Sweeps verify their rows: damaged job files are recomputed, a foreign sweep directory is refused,
a bad point is a row and the sweep goes on (issue 12, findings 6 and 7).

Every sweep runs through the command line's entry in this process (`ddlsim.app.cli.main`).
"""

from __future__ import annotations

import os
import stat

import pandas as pd
import pytest

from ddlsim.app.cli import EXIT_INVALID, main
from ddlsim.report.command import main as report_main
from ddlsim.report.gather import DEFINITION_NAME, DONE_NAME, inspect_sweep

BANDWIDTHS = ["100Gbps", "200Gbps", "400Gbps", "800Gbps"]
SWEEP = ["-m", "experiment=single", "task=collective", "fabric=ideal", "task.sizes=[1GB,2GB]", "task.num_ranks=[16]",
         f"fabric.bandwidth={','.join(BANDWIDTHS)}", "report.plots=false"]


def sweep(capsys, sweep_dir, *extra, arguments=SWEEP):
    capsys.readouterr()
    status = main([*arguments, *extra, f"hydra.sweep.dir={sweep_dir}"])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """The gathered bytes of an undamaged run of `SWEEP`."""
    sweep_dir = tmp_path_factory.mktemp("reference") / "sweep"
    assert main([*SWEEP, f"hydra.sweep.dir={sweep_dir}"]) == 0
    return sweep_dir, (sweep_dir / "results.csv").read_bytes()


def cut_mid_row(path):
    text = path.read_bytes()
    path.write_bytes(text[: text.rindex(b"\n", 0, len(text) - 1) + 40])


def cut_in_header(path):
    path.write_bytes(path.read_bytes()[:12])


def empty(path):
    path.write_bytes(b"")


@pytest.mark.parametrize("damage", [cut_mid_row, cut_in_header, empty], ids=lambda damage: damage.__name__)
def test_a_damaged_job_is_named_then_recomputed_and_the_rows_are_identical(damage, reference, tmp_path, capsys):
    _, expected = reference
    sweep_dir = tmp_path / "sweep"
    assert sweep(capsys, sweep_dir)[0] == 0
    damage(sweep_dir / "2" / "results.csv")

    # ddlsim-report names the damaged job, reports the rest, and does not crash.
    assert report_main([str(sweep_dir), "--no-plots", "--out", str(tmp_path / "report")]) == 1
    err = capsys.readouterr().err
    assert f"damaged: job 2 ({sweep_dir / '2'}): results.csv does not match the checksum" in err
    assert len(pd.read_csv(tmp_path / "report" / "results.csv")) == 2 * (len(BANDWIDTHS) - 1)

    status, out, _ = sweep(capsys, sweep_dir)
    assert status == 0
    assert out.count("already finished, skipped") == len(BANDWIDTHS) - 1
    assert "job 2 already finished" not in out
    assert (sweep_dir / "results.csv").read_bytes() == expected
    assert inspect_sweep(sweep_dir).problems() == []


def test_a_sweep_directory_of_another_sweep_is_refused_unless_replaced(reference, tmp_path, capsys):
    _, expected = reference
    sweep_dir = tmp_path / "sweep"
    other = [*SWEEP[:-2], "fabric.bandwidth=100Gbps,50Gbps,25Gbps,12Gbps,6Gbps", "report.plots=false"]
    assert sweep(capsys, sweep_dir, arguments=other)[0] == 0
    before = {path: path.stat().st_mtime_ns for path in sweep_dir.rglob("*") if path.is_file()}

    status, out, err = sweep(capsys, sweep_dir)
    assert status == EXIT_INVALID
    assert err.strip().splitlines() == [
        f"ddlsim: error: hydra.sweep.dir = '{sweep_dir}': holds a different sweep (5 jobs, the first "
        "'experiment=single task=collective fabric=ideal task.sizes=[1GB,2GB] task.num_ranks=[16] "
        "fabric.bandwidth=100Gbps'); choose another directory, or set output.replace_sweep=true to replace it "
        "(only this sweep's jobs are then gathered)"]
    assert {path: path.stat().st_mtime_ns for path in before} == before  # nothing ran, nothing was touched

    status, out, _ = sweep(capsys, sweep_dir, "output.replace_sweep=true")
    assert status == 0
    assert out.count("already finished, skipped") == 1  # job 0 of both sweeps is the same point
    assert (sweep_dir / "results.csv").read_bytes() == expected
    assert inspect_sweep(sweep_dir).stale == 1  # job 4 of the old sweep, ignored


def test_a_job_without_checksums_is_recomputed(reference, tmp_path, capsys):
    _, expected = reference
    sweep_dir = tmp_path / "sweep"
    assert sweep(capsys, sweep_dir)[0] == 0
    (sweep_dir / "1" / DONE_NAME).write_text('{"overrides": [], "rows": 2}')  # a marker from an older ddlsim
    status, out, _ = sweep(capsys, sweep_dir)
    assert status == 0 and out.count("already finished, skipped") == len(BANDWIDTHS) - 1
    assert (sweep_dir / "results.csv").read_bytes() == expected


def test_result_files_are_created_with_ordinary_permissions(reference):
    sweep_dir, _ = reference
    previous = os.umask(0o022)
    os.umask(previous)
    expected = 0o666 & ~previous
    for path in [sweep_dir / "results.csv", sweep_dir / "results.parquet", sweep_dir / DEFINITION_NAME,
                 sweep_dir / "0" / "results.csv", sweep_dir / "0" / "results.parquet", sweep_dir / "0" / DONE_NAME]:
        assert stat.S_IMODE(path.stat().st_mode) == expected, path


def test_a_bad_point_is_a_row_and_the_sweep_goes_on(tmp_path, capsys):
    """Finding 6: ``model.target_loss=2.2,-1,2.0`` used to stop the sweep and gather nothing."""
    losses = ["2.5", "-1", "100", "2.4"]
    status, out, _ = sweep(capsys, tmp_path / "sweep", arguments=[
        "-m", "experiment=single", "fabric=ideal", f"model.target_loss={','.join(losses)}", "report.plots=false"])
    assert status == 0
    rows = pd.read_csv(tmp_path / "sweep" / "results.csv")
    assert list(rows["model_target_loss"]) == [2.5, -1.0, 100.0, 2.4]
    assert list(rows["status"].str.split(":").str[0]) == ["ok", "invalid", "invalid", "ok"]
    assert rows["status"][1] == "invalid: model.target_loss = -1.0: must be positive (or 0 with a shape)"
    assert rows["status"][2].startswith("invalid: model.target_loss = 100.0: must lie in the scaling laws' domain")
    assert (rows["iteration_time_s"].notna() == (rows["status"] == "ok")).all()
    assert "2 could not run" in out


def test_a_bad_value_shared_by_every_job_stops_the_sweep_before_any_work(tmp_path, capsys):
    status, _, err = sweep(capsys, tmp_path / "sweep", arguments=[
        "-m", "experiment=single", "fabric=ideal", "fabric.bandwidth=400", "model.target_loss=2.5,2.4"])
    assert status == EXIT_INVALID
    assert err.strip().splitlines() == [
        "ddlsim: error: fabric.bandwidth = '400': needs a unit: values take units, e.g. '400Gbps', '150GB/s', "
        "'1.3us', '80GiB', '312TFLOPS' (only 0 may go without one)"]
    assert not list((tmp_path / "sweep").glob("*/results.csv"))


def test_a_sweep_from_before_checksums_is_still_reported(tmp_path, capsys):
    """Job directories with rows but no checksummed marker and no definition (an older ddlsim)."""
    for job, rows in (("0", "fabric,time_s\nramp,1.0\n"), ("1", "fabric,time_s\nsuperpod,2.0\n"), ("2", "")):
        (tmp_path / job / ".hydra").mkdir(parents=True)
        (tmp_path / job / ".hydra" / "overrides.yaml").write_text(f"- seed={job}\n")
        (tmp_path / job / "results.csv").write_text(rows)
    assert report_main([str(tmp_path), "--no-plots"]) == 1
    assert "damaged: job 2" in capsys.readouterr().err
    gathered = pd.read_csv(tmp_path / "results.csv")
    assert list(gathered["overrides"]) == ["seed=0", "seed=1"] and list(gathered["time_s"]) == [1.0, 2.0]
