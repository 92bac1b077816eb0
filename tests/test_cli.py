"""The `ddlsim` command, as a user runs it: one line for every problem, before any work.

Most tests call the command line's entry in this process (`ddlsim.app.cli.main`); two run the real
console process to check what a shell sees.
"""

import subprocess
import sys

import pandas as pd
import pytest

from ddlsim.app.cli import EXIT_INFEASIBLE, EXIT_INVALID, main
from ddlsim.app.config_store import GROUPS

# The default main job is a sweep (experiment=quickstart); these tests run single collectives.
SINGLE_COLLECTIVE_RUN = ("experiment=single", "task=collective", "fabric=ideal")


def ddlsim(*args: str, cwd) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ddlsim.app.cli", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=300)


def cli(capsys, *args):
    capsys.readouterr()
    status = main(list(args))
    captured = capsys.readouterr()
    return status, captured.out, captured.err.strip().splitlines()


def test_help_lists_the_config_groups(capsys):
    status, out, _ = cli(capsys, "--help")
    assert status == 0
    for group in GROUPS:
        assert f"\n{group}: " in out


def test_unknown_option_is_one_line(capsys):
    status, _, err = cli(capsys, "fabric=doesnotexist")
    assert status == EXIT_INVALID and len(err) == 1
    assert "fabric=doesnotexist" in err[0] and "choose one of" in err[0]


def test_bad_value_is_one_line_naming_key_and_rule_in_a_real_process(tmp_path):
    result = ddlsim("fabric=ideal", "fabric.bandwidth=-5Gbps", cwd=tmp_path)
    assert result.returncode == EXIT_INVALID
    assert result.stderr.strip() == "ddlsim: error: fabric.bandwidth = '-5Gbps': must be positive"
    assert not list(tmp_path.rglob("results.csv"))


def test_unknown_key_is_one_line(capsys):
    status, _, err = cli(capsys, "experiment=single", "fabric.bandwith=5Gbps")
    assert status == EXIT_INVALID and len(err) == 1
    assert err[0].startswith("ddlsim: error: fabric.bandwith: ")


def test_a_typo_added_with_plus_is_an_error_not_ignored(capsys, tmp_path):
    """Finding 2: ``+fabric.nic_bandwith=1Gbps`` was accepted, ignored, and exited 0."""
    status, _, err = cli(capsys, "experiment=single", "fabric=superpod", "+fabric.nic_bandwith=1Gbps",
                         f"hydra.run.dir={tmp_path}")
    assert status == EXIT_INVALID
    assert err == ["ddlsim: error: fabric.nic_bandwith: unknown key for SuperPodConfig; did you mean 'nic_bandwidth'?"]
    assert not (tmp_path / "results.csv").exists()


@pytest.mark.parametrize("override", ["+seed2=1", "+parallel.tensr=2", "+training.overlap_mode=none",
                                      "+compute.gemm.flops=0.5", "+output.csvv=true", "+model.target_los=2.0"])
def test_plus_cannot_add_a_key_anywhere_but_the_extension_points(capsys, override):
    status, _, err = cli(capsys, "experiment=single", override)
    assert status == EXIT_INVALID and len(err) == 1 and "unknown key" in err[0]


@pytest.mark.parametrize("override", ["+task.collectives.ramp.name=ring", "+compute.classes.my_kind=gemm",
                                      "+hydra.job.env_set.DDLSIM_TEST=1"])
def test_the_documented_extension_points_take_new_keys(capsys, tmp_path, override):
    status, _, err = cli(capsys, "experiment=single", "fabric=ideal", "fabric.num_nodes=4", override,
                         f"hydra.run.dir={tmp_path}")
    assert status == EXIT_INFEASIBLE and err[0].startswith("ddlsim: infeasible:")  # composed, built, then run


def test_a_number_without_a_unit_is_an_error_stating_the_rule(capsys, tmp_path):
    """Finding 3: ``fabric.nic_bandwidth=400`` was read as 400 b/s (an iteration of 1,102 days)."""
    status, _, err = cli(capsys, "experiment=single", "fabric=superpod", "fabric.nic_bandwidth=400",
                         f"hydra.run.dir={tmp_path}")
    assert status == EXIT_INVALID
    assert err == ["ddlsim: error: fabric.nic_bandwidth = '400': needs a unit: values take units, e.g. '400Gbps', "
                   "'150GB/s', '1.3us', '80GiB', '312TFLOPS' (only 0 may go without one)"]


def test_an_infeasible_single_run_exits_non_zero_with_its_reason(capsys, tmp_path):
    """Finding 5: an infeasible single run exited 0 (the README says it raises)."""
    status, out, err = cli(capsys, "experiment=single", "fabric=ideal", "fabric.num_nodes=4",
                           f"hydra.run.dir={tmp_path}")
    assert status == EXIT_INFEASIBLE
    assert err == ["ddlsim: infeasible: 8 ranks do not fit on ideal, which has 4 nodes (4 too many)"]
    assert not (tmp_path / "results.csv").exists() and "wrote" not in out


def test_an_unusable_run_directory_is_one_line(capsys, tmp_path):
    """Finding 9: an unusable ``hydra.run.dir`` gave a Hydra traceback."""
    (tmp_path / "a_file").write_text("not a directory")
    status, _, err = cli(capsys, *SINGLE_COLLECTIVE_RUN, f"hydra.run.dir={tmp_path / 'a_file' / 'run'}")
    assert status == EXIT_INVALID and len(err) == 1
    assert err[0].startswith(f"ddlsim: error: cannot write {tmp_path / 'a_file'}")


def test_a_results_file_that_is_a_directory_is_refused_before_any_work(capsys, tmp_path):
    """Finding 9: a ``results.csv`` that exists as a directory gave a traceback after all the work."""
    (tmp_path / "results.csv").mkdir()
    status, out, err = cli(capsys, *SINGLE_COLLECTIVE_RUN, f"hydra.run.dir={tmp_path}")
    assert status == EXIT_INVALID
    assert err == [f"ddlsim: error: hydra.run.dir = '{tmp_path}': cannot hold the result file results.csv: "
                   f"{tmp_path / 'results.csv'} is a directory"]
    assert "all_reduce" not in out  # no summary: nothing ran
    status, _, err = cli(capsys, "-m", *SINGLE_COLLECTIVE_RUN, "seed=0,1", f"hydra.sweep.dir={tmp_path}")
    assert status == EXIT_INVALID and len(err) == 1 and "results.csv" in err[0]
    assert not (tmp_path / "0").exists()


def test_single_run_writes_csv_and_parquet(capsys, tmp_path):
    run_dir = tmp_path / "run"
    status, out, err = cli(capsys, *SINGLE_COLLECTIVE_RUN, "task.sizes=[1GB]", "task.num_ranks=[16]",
                           f"hydra.run.dir={run_dir}")
    assert status == 0, err
    csv = pd.read_csv(run_dir / "results.csv")
    parquet = pd.read_parquet(run_dir / "results.parquet")
    assert len(csv) == 1 and csv.equals(parquet)
    assert {"size_bytes", "time_s", "num_ranks"} <= set(csv.columns)
    assert "results.csv" in out


def test_two_point_sweep_gathers_both_rows(capsys, tmp_path):
    sweep_dir = tmp_path / "sweep"
    status, _, err = cli(capsys, "-m", *SINGLE_COLLECTIVE_RUN, "fabric.bandwidth=100Gbps,400Gbps", "task.sizes=[1GB]",
                         "task.num_ranks=[16]", "report.plots=false", f"hydra.sweep.dir={sweep_dir}")
    assert status == 0, err
    gathered = pd.read_csv(sweep_dir / "results.csv")
    assert len(gathered) == 2
    assert list(gathered["overrides"].str.extract(r"fabric.bandwidth=(\w+)")[0]) == ["100Gbps", "400Gbps"]
    slow, fast = gathered["time_s"]
    assert slow > fast > 0


def test_console_process_runs_a_sweep(tmp_path):
    result = ddlsim("-m", *SINGLE_COLLECTIVE_RUN, "seed=0,1", "report.plots=false",
                    f"hydra.sweep.dir={tmp_path / 'sweep'}", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert pd.read_csv(tmp_path / "sweep" / "results.csv")["job"].nunique() == 2
