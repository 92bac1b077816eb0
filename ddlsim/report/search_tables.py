"""What a plan search prints: the best plans per budget, the Pareto table, and across a sweep of
fabrics which fabric wins when each uses its best plan.

`search_summary(rows, stats)` is one job's summary (one fabric). `fabric_comparison(frame)` reads
the gathered rows of a sweep (`plan_rank` 1 is each fabric's best plan per budget); the sweep's
report (`ddlsim.report.make`) prints it for any table with a ``plan_rank`` column.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from ddlsim.report.table import quantity_table

PLAN_COLUMNS = {"plan_rank": str, "tp_degree": str, "cp_degree": str, "pp_degree": str, "virtual_stages": str,
                "dp_degree": str, "ep_degree": str, "zero_stage": str, "micro_batch": str, "recompute": str}
HEADERS = {"plan_rank": "rank", "tp_degree": "TP", "cp_degree": "CP", "pp_degree": "PP", "virtual_stages": "v",
           "dp_degree": "DP", "ep_degree": "EP", "zero_stage": "ZeRO", "micro_batch": "mb",
           "iteration_time_s": "iteration", "time_to_accuracy_s": "time to accuracy", "comm_fraction": "comm share",
           "bubble_time_s": "bubble", "memory_per_gpu_bytes": "memory/GPU", "series": "fabric"}


def _kinds(rows: Sequence[Mapping[str, Any]]) -> dict[str, str | None]:
    """The columns of a plan table and each one's kind (`quantity_table` puts one unit in each header)."""
    kinds: dict[str, str | None] = {key: None for key in PLAN_COLUMNS if all(key in row for row in rows)}
    kinds["iteration_time_s"] = "time_s"
    if any(math.isfinite(float(row.get("time_to_accuracy_s", math.nan))) for row in rows):
        kinds["time_to_accuracy_s"] = "time_s"
    kinds["comm_fraction"] = "percent"
    if all("bubble_time_s" in row for row in rows):
        kinds["bubble_time_s"] = "time_s"
    kinds["memory_per_gpu_bytes"] = "size_bytes"
    return kinds


def search_summary(rows: Sequence[Mapping[str, Any]], stats: Any) -> str:
    """The best plans of each budget, the Pareto table and the search's counts (one fabric)."""
    first = rows[0]
    lines = [f"{first['model']} on {first['fabric']} ({first['algorithm']} collectives), {first['device']}: "
             f"the best plans per GPU budget"]
    for gpus in sorted({int(row["gpus"]) for row in rows}):
        plans = [row for row in rows if int(row["gpus"]) == gpus]
        lines += ["", f"{gpus:,} GPUs:", quantity_table(plans, _kinds(plans), HEADERS)]
    lines += ["", "Pareto table (best plan per budget; front: faster than every smaller budget):",
              pareto_table([row for row in rows if int(row["plan_rank"]) == 1])]
    rate = stats.evaluated / stats.seconds if stats.seconds > 0 else math.nan
    lines += ["", f"plans: {stats.enumerated:,} enumerated, {stats.invalid:,} invalid (a rule), "
                  f"{stats.over_memory:,} over memory, {stats.pruned:,} pruned by the time bound, "
                  f"{stats.priced:,} priced; {stats.evaluated:,} evaluated in {stats.seconds:.2f} s of CPU "
                  f"({rate:,.0f} plans per CPU second)"]
    if stats.bound_violations:
        lines.append(f"warning: {stats.bound_violations} priced plan(s) ran faster than their lower bound; "
                     "pruning was switched off")
    return "\n".join(lines)


def pareto_table(best: Sequence[Mapping[str, Any]]) -> str:
    objective = best[0].get("search_objective", "iteration_time_s") if best else "iteration_time_s"
    kinds = {"gpus": None, objective: "time_s", "plan": None, "pareto": None}
    table = [{**row, "gpus": f"{int(row['gpus']):,}", "plan": plan_label(row),
              "pareto": "front" if bool(row["pareto"]) else ""}
             for row in sorted(best, key=lambda row: int(row["gpus"]))]
    return quantity_table(table, kinds, {"gpus": "GPUs", **HEADERS, "pareto": ""})


def plan_label(row: Mapping[str, Any]) -> str:
    parts = [f"TP {row['tp_degree']}"]
    if int(row.get("cp_degree", 1)) > 1:
        parts.append(f"CP {row['cp_degree']}")
    pipeline = f"PP {row['pp_degree']}"
    if int(row.get("virtual_stages", 1)) > 1:
        pipeline += f" x v {row['virtual_stages']}"
    parts += [pipeline, f"DP {row['dp_degree']}"]
    if int(row.get("ep_degree", 1)) > 1:
        parts.append(f"EP {row['ep_degree']}")
    parts += [f"ZeRO {row['zero_stage']}", f"mb {row['micro_batch']}", f"recompute {row['recompute']}"]
    return ", ".join(parts)


def fabric_comparison(frame: Any) -> str:
    """Across fabrics: each fabric's best plan per budget, the winner and by how much."""
    best = frame[(frame["plan_rank"] == 1) & (frame["status"] == "ok")] if "status" in frame else \
        frame[frame["plan_rank"] == 1]
    if best.empty:
        return "no plan of the search could run"
    objective = str(best["search_objective"].iloc[0]) if "search_objective" in best else "iteration_time_s"
    lines = ["Which fabric wins when each uses its best plan:"]
    for gpus, rows in best.groupby("gpus", sort=True):
        rows = rows.sort_values([objective, "fabric"])
        fastest = float(rows[objective].iloc[0])
        table = [{**row, "plan": plan_label(row), "slower": float(row[objective]) / fastest}
                 for row in rows.to_dict("records")]
        kinds = {"fabric": None, objective: "time_s", "comm_fraction": "percent", "plan": None, "slower": "ratio"}
        headers = {**HEADERS, "slower": "time / winner's"}
        lines += ["", f"{int(gpus):,} GPUs: {table[0]['fabric']} wins", quantity_table(table, kinds, headers)]
    for fabric, rows in best.groupby("fabric", sort=True):
        lines += ["", f"Pareto table on {fabric}:", pareto_table(rows.to_dict("records"))]
    return "\n".join(lines)
