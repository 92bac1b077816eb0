"""ddlsim.validation.vtrain against the measured A100 runs, and its split and CLI on synthetic rows.

The accuracy test needs ../shared/validation/vtrain (beside the repository) and skips cleanly
without it. Its bounds are the errors the committed model reached (docs/validation.md) plus a
small margin for floating-point noise, so that a later change cannot silently make them worse.
"""

import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from ddlsim.validation import vtrain as validate

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "validate_vtrain.py"
DATA = REPO.parent / "shared" / "validation" / "vtrain"

HELD_OUT_MULTI_NODE_MAPE = 8.44  # reached with the shipped constants: see docs/validation.md
FITTED_SINGLE_NODE_MAPE = 7.99  # the single-node file the memory, host and gap constants were fitted on
MARGIN = 0.05  # floating-point noise across platforms, nothing more

needs_data = pytest.mark.skipif(not all((DATA / name).is_file() for name in validate.FILES.values()),
                                reason=f"measured runs not found in {DATA}")

SINGLE_HEADER = ("\ufeff# GPUs,global batch,micro batch,hidden size,attention heads,# layers,sequence length,"
                 "tensor parallelism,data parallelism,pipeline parallelism,iteration time (ms)")
MULTI_HEADER = "\ufeffParameters (billion)," + SINGLE_HEADER.lstrip("\ufeff")


def synthetic_data(directory: Path) -> Path:
    """Three small runs per file, in the measured files' format (byte-order mark included)."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / validate.FILES["single-node"]).write_text("\n".join([
        SINGLE_HEADER, "2,8,2,1024,16,12,1024,1,1,2,100.0", "4,8,1,1024,16,12,1024,2,2,1,150.0",
        "8,16,2,2048,16,12,1024,2,2,2,400.0"]) + "\n", encoding="utf-8")
    (directory / validate.FILES["multi-node"]).write_text("\n".join([
        MULTI_HEADER, "3.6,64,512,8,3072,32,30,2048,8,8,1,5000.0", "3.6,64,512,4,3072,32,30,2048,1,32,2,4400.0",
        "3.6,64,512,16,3072,32,30,2048,2,32,1,3900.0"]) + "\n", encoding="utf-8")
    return directory


@needs_data
def test_measured_runs_stay_within_the_reached_accuracy(tmp_path):
    results = validate.run(DATA, tmp_path)
    assert len(results) == 1549 and results.predicted_ms.gt(0).all()
    assert results.fitted.equals(results.scale == "single-node")
    multi = results[~results.fitted].error_pct.abs().mean()
    single = results[results.fitted].error_pct.abs().mean()
    assert multi <= HELD_OUT_MULTI_NODE_MAPE + MARGIN
    assert single <= FITTED_SINGLE_NODE_MAPE + MARGIN
    written = pd.read_csv(tmp_path / "vtrain_predictions.csv")
    assert len(written) == 1549 and {"measured_ms", "predicted_ms", "error_pct", "fitted"} <= set(written.columns)
    assert (tmp_path / "vtrain_predicted_vs_measured.png").stat().st_size > 10_000


@needs_data
def test_fitting_rows_are_the_single_node_file_and_the_cross_validation_split_is_by_group():
    rows = validate.load_rows(DATA)
    assert validate.fitting_mask(rows).equals(rows.scale == "single-node")
    mask = validate.half_groups_mask(rows)
    assert not mask[rows.scale == "multi-node"].any()
    groups = rows[rows.scale == "single-node"].assign(fitted=mask).groupby(list(validate.SPLIT_GROUP)).fitted
    assert groups.nunique().eq(1).all()  # every measurement group wholly on one side
    assert groups.first().sum() == len(groups.first()) // 2
    assert mask.equals(validate.half_groups_mask(validate.load_rows(DATA)))  # seeded: the same every time


def test_cli_reads_a_data_directory_and_writes_predictions(tmp_path):
    data = synthetic_data(tmp_path / "data")
    out = tmp_path / "out"
    done = subprocess.run([sys.executable, str(SCRIPT), str(data), "--out", str(out), "--no-plot"],
                          capture_output=True, text=True, check=True, timeout=600)
    assert "6 measured runs simulated" in done.stdout and "multi-node" in done.stdout
    written = pd.read_csv(out / "vtrain_predictions.csv")
    assert list(written.scale) == ["single-node"] * 3 + ["multi-node"] * 3
    assert written.predicted_ms.gt(0).all()
    assert written.parallelism.tolist() == ["PP", "TP+DP", "TP+DP+PP", "TP+DP", "DP+PP", "TP+DP"]


def test_cli_refuses_a_directory_without_the_files(tmp_path):
    done = subprocess.run([sys.executable, str(SCRIPT), str(tmp_path)], capture_output=True, text=True, timeout=600)
    assert done.returncode != 0 and "does not hold" in done.stderr
