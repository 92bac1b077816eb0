"""The `ddlsim` command end to end, as a user runs it."""

import subprocess
import sys

import pandas as pd

from ddlsim.config_store import GROUPS

# The default main job is a sweep (experiment=quickstart); these tests run single collectives.
SINGLE_COLLECTIVE_RUN = ("experiment=single", "task=collective", "fabric=ideal")


def ddlsim(*args: str, cwd) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ddlsim.cli", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=300)


def test_help_lists_the_config_groups(tmp_path):
    result = ddlsim("--help", cwd=tmp_path)
    assert result.returncode == 0
    for group in GROUPS:
        assert f"\n{group}: " in result.stdout


def test_unknown_option_is_one_line(tmp_path):
    result = ddlsim("fabric=doesnotexist", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        result.stderr.strip()]
    assert "fabric=doesnotexist" in result.stderr and "choose one of" in result.stderr
    assert "Traceback" not in result.stderr


def test_bad_value_is_one_line_naming_key_and_rule(tmp_path):
    result = ddlsim("fabric=ideal", "fabric.bandwidth=-5Gbps", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.strip() == "ddlsim: error: fabric.bandwidth = '-5Gbps': must be positive"


def test_unknown_key_is_one_line(tmp_path):
    result = ddlsim("fabric.bandwith=5Gbps", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.strip().startswith("ddlsim: error: fabric.bandwith: unknown key")
    assert len(result.stderr.strip().splitlines()) == 1


def test_single_run_writes_csv_and_parquet(tmp_path):
    run_dir = tmp_path / "run"
    result = ddlsim(*SINGLE_COLLECTIVE_RUN, "task.sizes=[1GB]", "task.num_ranks=[16]", f"hydra.run.dir={run_dir}",
                    cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    csv = pd.read_csv(run_dir / "results.csv")
    parquet = pd.read_parquet(run_dir / "results.parquet")
    assert len(csv) == 1 and csv.equals(parquet)
    assert {"size_bytes", "time_s", "num_ranks"} <= set(csv.columns)
    assert "results.csv" in result.stdout


def test_two_point_sweep_gathers_both_rows(tmp_path):
    sweep_dir = tmp_path / "sweep"
    result = ddlsim("-m", *SINGLE_COLLECTIVE_RUN, "fabric.bandwidth=100Gbps,400Gbps", "task.sizes=[1GB]",
                    "task.num_ranks=[16]", f"hydra.sweep.dir={sweep_dir}", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    gathered = pd.read_csv(sweep_dir / "results.csv")
    assert len(gathered) == 2
    assert list(gathered["overrides"].str.extract(r"fabric.bandwidth=(\w+)")[0]) == ["100Gbps", "400Gbps"]
    slow, fast = gathered["time_s"]
    assert slow > fast > 0
