"""What the plan search claims on the measured vTrain configurations, and where its gain comes from.

    python scripts/vtrain_search_claims.py [DATA_DIR] [--out DIR]

For each configuration group of the multi-node file (one GPT model, GPU count and global batch;
the practitioners measured several plans of each), this runs the plan search (`task=search`, its
default plan space) on the vTrain cluster with the A100 compute that `validate_vtrain.py` scores,
and compares the plan it ranks first with the fastest MEASURED plan of the group, simulated the
same way:

- `claimed_speedup`: the measured plan's simulated iteration time over the first plan's: what
  the search tells a user they would gain by switching;
- `actual_over_claim`: the measured plan's measured time over the first plan's simulated time,
  for scale (not a validation: nobody measured the search's plan);
- the gain split into the terms of the iteration, measured plan minus first plan:
  compute, exposed communication, pipeline bubble (they add up to the difference), and
  `memory`: the choices memory made possible that the measured plan did not use (less
  recompute, ZeRO), whose gain shows up in the compute term.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import pandas as pd

from ddlsim.validation.vtrain import DEFAULT_DATA, REPO, load_rows

GROUP = ("params_billion", "gpus", "global_batch", "d_model", "heads", "layers", "seq_len")
PLAN = ("tp_degree", "pp_degree", "virtual_stages", "dp_degree", "cp_degree", "zero_stage", "micro_batch",
        "recompute")
TERMS = ("compute_time_s", "exposed_comm_time_s", "bubble_time_s")


def _model(group: dict[str, Any]) -> list[str]:
    return ["experiment=vtrain_a100", f"model.d_model={group['d_model']}", f"model.heads={group['heads']}",
            f"model.layers={group['layers']}", f"model.seq_len={group['seq_len']}",
            f"model.global_batch={group['global_batch']}", f"parallel.max_gpus={group['gpus']}"]


def _frame(overrides: list[str]) -> pd.DataFrame:
    import ddlsim

    return ddlsim.run(overrides).frame()


def search_first(group: dict[str, Any], micro_batches: list[int]) -> pd.Series:
    """The row of the plan `task=search` ranks first for `group`: its default plan space, with the
    measured plans' micro-batches added to it, so that the measured plans are candidates too."""
    batches = ",".join(str(size) for size in micro_batches)
    rows = _frame([*_model(group), "task=search", f"task.gpus=[{group['gpus']}]", "task.top=1",
                   f"task.micro_batch=[{batches}]", "task.progress=false"])
    return rows[rows.plan_rank == 1].iloc[0]


def simulate_plan(group: dict[str, Any], measured: Any) -> pd.Series:
    """The `task=train` row of a measured plan (1F1B, full recompute, as measured)."""
    rows = _frame([*_model(group), f"parallel.tensor={measured.tp}", f"parallel.data={measured.dp}",
                   f"parallel.pipeline={measured.pp}", f"parallel.micro_batch={measured.micro_batch}"])
    return rows.iloc[0]


def plan_label(row: pd.Series) -> str:
    virtual = f" x v {int(row.virtual_stages)}" if int(row.virtual_stages) > 1 else ""
    return (f"TP {int(row.tp_degree)}, PP {int(row.pp_degree)}{virtual}, DP {int(row.dp_degree)}, "
            f"ZeRO {int(row.zero_stage)}, mb {int(row.micro_batch)}, recompute {row.recompute}")


def memory_enabled(first: pd.Series, measured: pd.Series) -> str:
    """The memory-dependent choices of the first plan that the measured plan did not make."""
    changes = []
    if first.recompute != measured.recompute:
        changes.append(f"recompute {measured.recompute} -> {first.recompute}")
    if int(first.zero_stage) != int(measured.zero_stage):
        changes.append(f"ZeRO {int(measured.zero_stage)} -> {int(first.zero_stage)}")
    return "; ".join(changes) or "none"


def claims(rows: pd.DataFrame) -> pd.DataFrame:
    """One row per multi-node configuration group of `rows` (module docstring)."""
    multi = rows[rows.scale == "multi-node"]
    out = []
    for key, members in multi.groupby(list(GROUP), sort=True):
        group = {name: (float(value) if name == "params_billion" else int(value))
                 for name, value in zip(GROUP, key, strict=True)}
        fastest = members.loc[members.measured_ms.idxmin()]
        measured = simulate_plan(group, fastest)
        first = search_first(group, sorted({1, 2, *(int(size) for size in members.micro_batch)}))
        gain = {term: float(measured[term] - first[term]) for term in TERMS}
        out.append({
            "model": f"GPT {group['params_billion']:g} B", "gpus": group["gpus"], "global_batch": group["global_batch"],
            "measured_plans": len(members), "measured_best_plan": plan_label(measured),
            "measured_best_ms": float(fastest.measured_ms),
            "simulated_measured_plan_ms": 1e3 * float(measured.iteration_time_s),
            "search_first_plan": plan_label(first), "search_first_ms": 1e3 * float(first.iteration_time_s),
            "claimed_speedup": float(measured.iteration_time_s / first.iteration_time_s),
            "actual_over_claim": float(fastest.measured_ms / (1e3 * first.iteration_time_s)),
            "same_plan": plan_label(measured) == plan_label(first),
            "gain_compute_ms": 1e3 * gain["compute_time_s"],
            "gain_exposed_comm_ms": 1e3 * gain["exposed_comm_time_s"],
            "gain_bubble_ms": 1e3 * gain["bubble_time_s"],
            "memory": memory_enabled(first, measured),
            "memory_per_gpu_gb": float(first.memory_per_gpu_bytes) / 1e9,
            "measured_plan_memory_per_gpu_gb": float(measured.memory_per_gpu_bytes) / 1e9,
        })
    return pd.DataFrame(out)


def markdown(table: pd.DataFrame) -> str:
    lines = ["| model | GPUs | measured fastest plan (ms measured / simulated) | search's first plan (ms simulated) "
             "| claimed speed-up | gain: compute / exposed comm / bubble (ms) | memory-enabled choices (GB/GPU) |",
             "|---|---|---|---|---|---|---|"]
    for row in table.itertuples(index=False):
        lines.append(f"| {row.model} | {row.gpus} | {row.measured_best_plan} ({row.measured_best_ms:,.0f} / "
                     f"{row.simulated_measured_plan_ms:,.0f}) | {row.search_first_plan} ({row.search_first_ms:,.0f}) | "
                     f"{row.claimed_speedup:.2f}x | {row.gain_compute_ms:+,.0f} / {row.gain_exposed_comm_ms:+,.0f} / "
                     f"{row.gain_bubble_ms:+,.0f} | {row.memory} ({row.measured_plan_memory_per_gpu_gb:.0f} -> "
                     f"{row.memory_per_gpu_gb:.0f}) |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("data_dir", nargs="?", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--out", type=Path, default=REPO / "outputs" / "validation")
    args = parser.parse_args()
    table = claims(load_rows(args.data_dir))
    args.out.mkdir(parents=True, exist_ok=True)
    table.to_csv(args.out / "vtrain_search_claims.csv", index=False, float_format="%.6g")
    print(markdown(table))
    print(f"\nwrote {args.out / 'vtrain_search_claims.csv'}")


if __name__ == "__main__":
    main()
