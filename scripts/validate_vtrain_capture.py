"""Capture ddlsim's own GPT at every measured multi-node vTrain configuration and score it.

    python scripts/validate_vtrain_capture.py [DATA_DIR] [--out DIR] [--limit N] [--rows I,J,..]
                                              [--no-replicate --max-records N]

For each multi-node row of ``ground_truth_multi.csv`` (64 to 512 A100s), the Megatron-style
program of ``examples/megatron_gpt`` (tensor, pipeline and data parallel as in the row) is
captured on a fake process group of the row's GPUs, one rank per pipeline stage, and priced
with the same cluster, collective algorithm and A100 kernel roofline as the analytic path of
``scripts/validate_vtrain.py`` (``model=gpt``). Per row it checks that the captured collective
calls of every stage equal the analytic ones (op, bytes, group size, phase and count), and
records both iteration times next to the measured one, and the capture's peak live tensor bytes
(reported, not enforced).

The step has from about 3,000 records (GPT 3.6 B, one micro-batch) to 2.8 million (GPT 175 B, 32
stages, 384 micro-batches). Captures replicate repeated pipeline chunks (``replicate=True``,
docs/capture.md): each stage's forward and backward run for real a few times and are replayed
for the other micro-batches, so every row is captured. ``--no-replicate`` records every op
instead, and then leaves out rows estimated above ``--max-records``. Rows are taken from the
cheapest up. The MAPE of both paths is reported on the same captured rows.

Writes ``DIR/vtrain_capture.csv`` and prints the MAPE of both paths against the measurements and
the largest difference between the capture and the analytic path. Rows already in the CSV are
skipped, so an interrupted run resumes.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import pandas as pd

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from ddlsim.validation import vtrain as analytic  # noqa: E402

RECORDS_PER_LAYER_AND_MICRO_BATCH = 95  # measured: forward, recompute, backward and their collectives


def estimated_records(row) -> int:
    micro_batches = row.global_batch // (row.dp * row.micro_batch)
    return int(row.layers * micro_batches * RECORDS_PER_LAYER_AND_MICRO_BATCH)


COLUMNS = ["source_row", "params_billion", "gpus", "global_batch", "micro_batch", "d_model", "heads", "layers",
           "seq_len", "tp", "dp", "pp", "measured_ms", "analytic_ms", "capture_ms", "capture_vs_analytic_pct",
           "calls_match", "replicate", "capture_wall_s", "simulate_wall_s", "captured_ops", "step_ops",
           "capture_peak_memory_bytes"]


def capture_row(row, setup, replicate: bool = True) -> dict:
    from ddlsim.capture import capture
    from ddlsim.capture.compare import analytic_calls, call_table, captured_calls
    from ddlsim.capture.simulation import simulate_program
    from ddlsim.network.api import make_fabric
    from examples.megatron_gpt import make_build

    start = time.perf_counter()
    build = make_build(d_model=int(row.d_model), heads=int(row.heads), layers=int(row.layers),
                       seq_len=int(row.seq_len), micro_batch=int(row.micro_batch), global_batch=int(row.global_batch))
    program = capture(build, (int(row.pp), int(row.dp), int(row.tp)), ("pp", "dp", "tp"), warmup=0,
                      replicate=replicate)
    wall = time.perf_counter() - start
    reference = analytic.simulate_row(row, setup)
    workload = reference.workload
    match = all(call_table(analytic_calls(workload, stage), captured_calls(program, rank)).match.all()
                for stage, rank in zip(program.stages, program.ranks, strict=True))
    # the peak is reported, not enforced: the measured runs fit, so a capture over the memory is a finding
    start = time.perf_counter()
    result = simulate_program(program, make_fabric(analytic.FABRIC), analytic.ALGORITHM, setup.device, setup.compute,
                              check_memory=False)
    simulate_wall = time.perf_counter() - start
    analytic_ms = 1e3 * reference.iteration.iteration_time_s
    capture_ms = 1e3 * result.iteration.iteration_time_s
    return {**{column: getattr(row, column) for column in COLUMNS[:13]}, "analytic_ms": analytic_ms,
            "capture_ms": capture_ms, "capture_vs_analytic_pct": 100 * (capture_ms / analytic_ms - 1),
            "calls_match": match, "replicate": replicate, "capture_wall_s": wall, "simulate_wall_s": simulate_wall,
            "captured_ops": len(program.events), "step_ops": program.num_records,
            "capture_peak_memory_bytes": max(program.peak_memory_bytes.values())}


def _mape(rows: pd.DataFrame, column: str) -> float:
    return float((100 * (rows[column] - rows.measured_ms).abs() / rows.measured_ms).mean())


def table(results: pd.DataFrame) -> str:
    """The capture-vs-analytic table of docs/validation.md: all rows, then by model, then by parallelism."""
    parallelism = [analytic.parallelism_label(*degrees) for degrees in zip(results.tp, results.dp, results.pp,
                                                                           strict=True)]
    groups = [("all", results)]
    groups += [(f"GPT {size:g} B", rows) for size, rows in results.groupby("params_billion", sort=True)]
    groups += [(label, rows) for label, rows in results.assign(parallelism=parallelism).groupby("parallelism")]
    lines = ["| rows | runs | collective calls equal to `model=gpt` | capture vs analytic: mean / max difference "
             "| within 3 % | MAPE, analytic | MAPE, capture |", "|---|---|---|---|---|---|---|"]
    for label, rows in groups:
        difference = rows.capture_vs_analytic_pct.abs()
        lines.append(f"| {label} | {len(rows)} | {int(rows.calls_match.sum())} | {difference.mean():.2f} % / "
                     f"{difference.max():.2f} % | {int((difference <= 3).sum())} | {_mape(rows, 'analytic_ms'):.2f} % "
                     f"| {_mape(rows, 'capture_ms'):.2f} % |")
    return "\n".join(lines)


def summary(results: pd.DataFrame) -> str:
    worst = results.capture_vs_analytic_pct.abs()
    per_row = results.capture_wall_s + results.simulate_wall_s
    outside = results[worst > 3]
    return "\n".join([
        f"{len(results)} multi-node rows; collective calls equal on {int(results.calls_match.sum())} of them",
        f"MAPE against the measured times: analytic {_mape(results, 'analytic_ms'):.2f} %, "
        f"capture {_mape(results, 'capture_ms'):.2f} %",
        f"capture vs analytic: mean |difference| {worst.mean():.2f} %, max {worst.max():.2f} % "
        f"(row {int(results.source_row[worst.idxmax()])}); rows within 3 %: {int((worst <= 3).sum())}",
        "rows outside 3 %: " + (", ".join(f"{int(row.source_row)} ({row.capture_vs_analytic_pct:+.2f} %)"
                                          for row in outside.itertuples(index=False)) or "none"),
        f"records: {int(results.captured_ops.sum()):,} captured for {int(results.step_ops.sum()):,} in the steps",
        f"per row (capture + simulate): median {per_row.median():.1f} s, max {per_row.max():.1f} s, "
        f"sum {per_row.sum():.0f} s (capture median {results.capture_wall_s.median():.1f} s, simulate median "
        f"{results.simulate_wall_s.median():.1f} s)",
        table(results),
    ])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("data_dir", nargs="?", type=Path, default=analytic.DEFAULT_DATA)
    parser.add_argument("--out", type=Path, default=REPO / "outputs" / "validation")
    parser.add_argument("--limit", type=int, default=0, help="only the N cheapest multi-node rows")
    parser.add_argument("--rows", default="", help="only these source rows (comma-separated)")
    parser.add_argument("--no-replicate", action="store_true", help="record every op (no replayed chunks)")
    parser.add_argument("--max-records", type=int, default=60000,
                        help="with --no-replicate, leave out rows estimated above this")
    args = parser.parse_args()
    rows = analytic.load_rows(args.data_dir)
    rows = rows[rows.scale == "multi-node"]
    rows = rows.assign(records=[estimated_records(row) for row in rows.itertuples(index=False)])
    rows = rows.sort_values(["records", "source_row"], kind="stable")
    if args.rows:
        rows = rows[rows.source_row.isin([int(row) for row in args.rows.split(",")])]
    left_out = rows[rows.records > args.max_records] if args.no_replicate else rows.iloc[:0]
    rows = rows[~rows.source_row.isin(left_out.source_row)]
    if args.limit:
        rows = rows.head(args.limit)
    path = args.out / ("vtrain_capture_full.csv" if args.no_replicate else "vtrain_capture.csv")
    done = pd.read_csv(path) if path.is_file() else pd.DataFrame(columns=COLUMNS)
    setup = analytic.build_setup()
    args.out.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    for row in rows.itertuples(index=False):
        if int(row.source_row) in set(done.source_row.astype(int)):
            continue
        record = capture_row(row, setup, replicate=not args.no_replicate)
        done = pd.concat([frame for frame in (done, pd.DataFrame([record])) if len(frame)], ignore_index=True)
        done.to_csv(path, index=False, float_format="%.6g")
        print(f"row {row.source_row}: measured {row.measured_ms:.0f} ms, analytic {record['analytic_ms']:.0f} ms, "
              f"capture {record['capture_ms']:.0f} ms ({record['capture_vs_analytic_pct']:+.2f} %), "
              f"calls equal {record['calls_match']}, {record['captured_ops']:,} of {record['step_ops']:,} records "
              f"captured in {record['capture_wall_s']:.0f} s, simulated in {record['simulate_wall_s']:.0f} s",
              flush=True)
    results = done[done.source_row.isin(rows.source_row)]
    print(summary(results))
    print(f"{len(left_out)} rows left out: estimated above {args.max_records:,} records "
          f"({left_out.records.sum():,} in all, largest {left_out.records.max():,})" if len(left_out)
          else "no rows left out")
    print(f"this run: {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
