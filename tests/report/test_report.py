"""Reports from result rows: gathered files, figures, summary and side-by-side tables.

The rows here are synthetic (made up for the test, with easy numbers), not simulation results.
"""

import subprocess
import sys

import pandas as pd
import pytest

from ddlsim.report.columns import series_labels
from ddlsim.report.command import main as report_main
from ddlsim.report.figures import table_kind
from ddlsim.report.gather import gather_results, load_results
from ddlsim.report.make import make_report
from ddlsim.report.references.index import side_by_side
from ddlsim.report.settings import ReportSettings


def training_rows(model: str = "megatron") -> pd.DataFrame:
    """Megatron encoder rows (with their `shape_source`), or DLRM rows (with `num_tables`)."""
    own = {"num_tables": 8} if model == "dlrm" else {"shape_source": "scaling_laws"}
    rows = []
    # RAMP: 10 s compute + 1 s communication; fat-tree: 10 s + 10 s; topoopt: 10 s + 5 s (per iteration).
    for loss, steps, ranks in ((2.5, 100, 16), (2.0, 200, 512)):
        for fabric, comm in (("ramp", 1.0), ("superpod_oversub", 10.0), ("topoopt", 5.0)):
            iteration = 10.0 + comm
            rows.append({"fabric": fabric, "model_target_loss": loss, "num_ranks": ranks, "iteration_time_s": iteration,
                         "compute_time_s": 10.0, "exposed_comm_time_s": comm, "comm_fraction": comm / iteration,
                         "num_steps": steps, "time_to_accuracy_s": steps * iteration, "compute_source": "roofline",
                         "status": "ok", "model": model, **own})
    return pd.DataFrame(rows)


def collective_rows() -> pd.DataFrame:
    rows = []
    for fabric, bandwidth in (("ramp", 4.0), ("superpod", 1.0)):
        for algorithm, penalty in (("ring", 2.0), ("best_one", 1.0)):
            for ranks in (16, 64):
                for size in (10**6, 10**9):
                    transfer = size / bandwidth * 1e-9 * penalty
                    rows.append({"op": "all_reduce", "fabric": fabric, "algorithm": algorithm, "num_ranks": ranks,
                                 "size_bytes": size, "time_s": transfer + 1e-5 * ranks, "latency_s": 1e-5 * ranks,
                                 "transfer_s": transfer, "compute_s": 0.0})
    return pd.DataFrame(rows)


def test_training_report_writes_tables_figures_and_speedups(tmp_path):
    report = make_report(training_rows(), tmp_path, ReportSettings(reference="ramp_megatron"))
    names = sorted(path.name for path in report.paths)
    assert {"results.csv", "results.parquet", "side_by_side.csv"} <= set(names)
    for stem in ("training_time", "comm_share", "speedup"):
        assert f"{stem}.png" in names and f"{stem}.pdf" in names
    assert pd.read_csv(tmp_path / "results.csv").shape == (6, 13)
    # Fat-tree is 20/11 = 1.82x slower than RAMP, TopoOpt 15/11 = 1.36x.
    lines = report.text.splitlines()
    assert "ramp speed-up (x)" in lines[0]
    assert any("1.82" in line for line in lines) and any("1.36" in line for line in lines)


def test_side_by_side_spans_are_computed_from_the_rows():
    text, rows = side_by_side(training_rows(), "ramp_megatron")
    table = rows.set_index("quantity")
    assert table.loc["RAMP speed-up over Fat-Tree and TopoOpt", "paper"] == "1.01-16.7x"
    assert table.loc["RAMP speed-up over Fat-Tree and TopoOpt", "ddlsim"] == "1.36-1.82x"
    assert table.loc["RAMP communication share", "ddlsim"] == "9.09%"
    assert table.loc["Fat-Tree and TopoOpt communication share", "ddlsim"] == "33.3-50%"
    # 2x faster compute: RAMP 11 s -> 6 s (1.83x); fat-tree 20 s -> 15 s (1.33x), TopoOpt 15 -> 10 (1.5x).
    assert table.loc["2x faster compute: RAMP training-time reduction", "ddlsim"] == "1.83x"
    assert table.loc["2x faster compute: Fat-Tree and TopoOpt reduction", "ddlsim"] == "1.33-1.5x"
    assert "paper" in text.splitlines()[0]
    dlrm = side_by_side(training_rows(), "ramp_dlrm")[1].set_index("quantity")
    assert dlrm.loc["RAMP speed-up over Fat-Tree (max)", "ddlsim"] == "1.82x"


@pytest.mark.parametrize("reference", ["ramp_megatron", "ramp_dlrm"])
def test_side_by_side_of_a_sweep_narrowed_to_ramp_says_what_it_cannot_compare(reference):
    only_ramp = training_rows().query("fabric == 'ramp'")
    table = side_by_side(only_ramp, reference)[1].set_index("quantity")
    speedup = "RAMP speed-up over Fat-Tree and TopoOpt" if reference == "ramp_megatron" else \
        "RAMP speed-up over Fat-Tree (max)"
    assert table.loc[speedup, "ddlsim"] == "n/a"
    share = "RAMP communication share" if reference == "ramp_megatron" else "RAMP network overhead"
    assert table.loc[share, "ddlsim"] == "9.09%"


def test_unknown_reference_is_an_error():
    with pytest.raises(KeyError, match="unknown reference"):
        side_by_side(training_rows(), "nope")


def test_collective_report_keeps_the_best_algorithm_per_fabric(tmp_path):
    report = make_report(collective_rows(), tmp_path)
    names = {path.name for path in report.paths}
    assert {"collective_time_vs_size.png", "collective_time_vs_scale.pdf", "allreduce_breakdown.png"} <= names
    assert table_kind(collective_rows()) == "collective"


def test_figures_are_byte_for_byte_reproducible(tmp_path):
    first = make_report(training_rows(), tmp_path / "a", write_tables=False)
    second = make_report(training_rows(), tmp_path / "b", write_tables=False)
    for one, other in zip(first.paths, second.paths, strict=True):
        assert one.read_bytes() == other.read_bytes(), one.name


def test_variants_of_one_fabric_stay_apart():
    rows = collective_rows()
    frame = rows.assign(fabric="ideal", overrides=rows["fabric"].map({"ramp": "fabric.bandwidth=400Gbps",
                                                                        "superpod": "fabric.bandwidth=100Gbps"}))
    from ddlsim.report.columns import disambiguate

    labels = disambiguate(frame.assign(series=series_labels(frame)), ["op", "num_ranks", "size_bytes", "algorithm"])
    assert set(labels) == {"ideal fabric.bandwidth=100Gbps", "ideal fabric.bandwidth=400Gbps"}
    swept = frame.assign(overrides="fabric=superpod_oversub")
    assert set(series_labels(swept)) == {"superpod_oversub"}


def _fake_sweep(sweep_dir, frames):
    """Job directories as a sweep leaves them: rows, then a done marker with their checksum."""
    from ddlsim.app.sweep.callbacks import mark_job_finished

    for index, (overrides, frame) in enumerate(frames):
        job = sweep_dir / str(index)
        job.mkdir(parents=True)
        frame.to_csv(job / "results.csv", index=False)
        mark_job_finished(job, overrides, rows=len(frame), job=index)


def test_gather_orders_jobs_numerically_and_tags_overrides(tmp_path):
    rows = training_rows()
    frames = [([f"fabric={fabric}", f"model.target_loss={loss}"], group)
              for (fabric, loss), group in rows.groupby(["fabric", "model_target_loss"], sort=False)]
    frames += frames[:5] + frames[:5]  # 16 jobs, so that "10" sorts after "9"
    _fake_sweep(tmp_path, frames)
    gathered = gather_results(tmp_path)
    assert list(gathered["job"]) == [str(index) for index in range(16)]
    assert gathered["overrides"].iloc[1] == "fabric=superpod_oversub model.target_loss=2.5"
    assert load_results(tmp_path).equals(gathered)


def test_report_command_on_a_sweep_directory(tmp_path, capsys):
    rows = training_rows()
    _fake_sweep(tmp_path, [([f"fabric={fabric}"], group) for fabric, group in rows.groupby("fabric", sort=False)])
    assert report_main([str(tmp_path), "--reference", "ramp_megatron"]) == 0
    out = capsys.readouterr().out
    assert "side by side with the paper (ramp_megatron)" in out
    assert (tmp_path / "results.parquet").is_file() and (tmp_path / "figures" / "speedup.pdf").is_file()
    assert len(pd.read_parquet(tmp_path / "results.parquet")) == 6
    assert report_main([str(tmp_path / "missing")]) == 2


@pytest.mark.parametrize(("model", "reference", "rule"), [
    ("dlrm", "ramp_fig16", "compares the rows of experiment=ramp_fig16, which have shape_source; these results "
                           "(model dlrm) have none"),
    ("megatron", "ramp_fig17", "compares the rows of experiment=ramp_fig17, which have num_tables; these results "
                               "(model megatron) have none"),
    ("megatron", "wrht_fig5", "compares the rows of experiment=wrht_fig5, which have op, size_bytes, time_s; these "
                              "results (model megatron) have none")])
def test_a_reference_refuses_the_rows_of_another_experiment(tmp_path, capsys, model, reference, rule):
    """Issue 21: a DLRM sweep reported with --reference ramp_fig16 built a Megatron comparison from it."""
    training_rows(model).to_csv(tmp_path / "rows.csv", index=False)
    assert report_main([str(tmp_path / "rows.csv"), "--reference", reference, "--no-plots"]) == 2
    assert capsys.readouterr().err.splitlines() == [f"ddlsim-report: error: report.reference = {reference!r}: {rule}"]
    assert not (tmp_path / "side_by_side.csv").exists()


def test_a_reference_with_no_row_that_ran_says_why(tmp_path):
    rows = training_rows().assign(status="invalid: parallel.activation_offload = True: model dlrm cannot honour it")
    with pytest.raises(ValueError, match=r"^report.reference = 'ramp_fig16': no row of these results ran \(invalid: "
                                         r"parallel.activation_offload"):
        make_report(rows, tmp_path, ReportSettings(reference="ramp_fig16"))


def test_report_console_script_runs(tmp_path):
    training_rows().to_csv(tmp_path / "rows.csv", index=False)
    result = subprocess.run([sys.executable, "-m", "ddlsim.report.command", str(tmp_path / "rows.csv"), "--no-plots"],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "superpod_oversub" in result.stdout


def test_collective_side_by_side_uses_the_best_system_per_op():
    rows = []
    for fabric, scale in (("ramp", 1.0), ("superpod", 10.0), ("torus2d", 30.0)):
        for op, factor in (("all_reduce", 2.0), ("reduce_scatter", 1.0), ("all_to_all", 1.0)):
            for size in (10**9, 10 * 10**9):
                time_s = factor * scale * size * 1e-12 * (4.0 if fabric == "torus2d" and op == "all_to_all" else 1.0)
                rows.append({"op": op, "fabric": fabric, "algorithm": "x", "num_ranks": 65536, "size_bytes": size,
                             "time_s": time_s, "latency_s": 0.0, "transfer_s": time_s * 0.75,
                             "compute_s": time_s * 0.25})
    table = side_by_side(pd.DataFrame(rows), "ramp_collectives")[1].set_index("quantity")
    assert table.loc["  reduce_scatter", "ddlsim"] == "10x"  # the fat-tree is the best other system
    assert table.loc["all-reduce 10 GB: RAMP speed-up over the best electrical system", "ddlsim"] == "10x"
    assert table.loc["all-reduce 10 GB on RAMP: reduction compute share", "ddlsim"] == "25%"


def test_hybrid_side_by_side_checks_the_papers_statements():
    rows = []
    for p, flat in ((64, 0.01), (512, 0.02)):
        for bandwidth in (128e9, 4096e9):
            for fabric, time_s in (("sipac", 1e-3 * 4096e9 / bandwidth), ("bcube", 1.2e-3 * 4096e9 / bandwidth),
                                   ("superpod_sipac", flat), ("torus2d_sipac", 3e-3 * 4096e9 / bandwidth)):
                rows.append({"fabric": fabric, "num_ranks": p, "cu_bandwidth_bps": bandwidth, "time_s": time_s})
    table = side_by_side(pd.DataFrame(rows), "sipac_hybrid")[1].set_index("quantity")
    assert table.loc["p=512, 128 -> 4096 Gb/s: SuperPod JCT reduction", "ddlsim"] == "1x"
    assert table.loc["p=512: SiPAC faster than SuperPod from", "ddlsim"] == "4096 Gb/s"
    assert table.loc["p=64, 128 -> 4096 Gb/s: SiPAC JCT reduction", "ddlsim"] == "32x"
