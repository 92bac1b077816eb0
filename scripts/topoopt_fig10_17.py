#!/usr/bin/env python
"""Reproduce TopoOpt Fig. 10 (interconnect cost) and Fig. 17 (reconfiguration latency) with ddlsim.

Fig. 10: network cost of TopoOpt (patch panels, or 3D-MEMS OCSs), OCS-reconfig, the Ideal Switch
(a full-bisection fat-tree of d x B links), the cost-equivalent fat-tree, the 2:1 oversubscribed
fat-tree and the expander, from 16 to 4,394 servers, with appendix G's component counts and
Table 2's prices (`ddlsim.network.fabrics.topoopt.cost`). The paper does not say which d and B
its Fig. 10 uses; we show d = 4 and d = 8 at B = 100 Gbps.

Fig. 17: DLRM and BERT (List 1, Sec. 5.3 sizes) on 128 servers of 4 GPUs, d = 8, B = 100 Gbps:
iteration time of OCS-reconfig with and without host forwarding while its reconfiguration latency
goes from 1 us to 10 ms (Algorithm 5 every 50 ms), against TopoOpt's fixed topology.

Writes under --out (default ./reproductions/topoopt_fig10_17/): fig10.csv, fig17.csv,
comparison.csv, fig10 and fig17 (PNG and PDF).

    python scripts/topoopt_fig10_17.py
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import pandas as pd  # noqa: E402

from ddlsim.network.fabrics.topoopt import cost  # noqa: E402
from ddlsim.network.fabrics.topoopt.demand import server_traffic  # noqa: E402
from ddlsim.network.fabrics.topoopt.reconfig_sim import (  # noqa: E402
    ReconfigPolicy,
    simulate_reconfigurable,
    workload_phases,
)
from ddlsim.network.fabrics.topoopt.topology_finder import topology_finder  # noqa: E402
from ddlsim.report.charts import Quantity, line_chart, panels_by  # noqa: E402
from ddlsim.report.table import format_table  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from topoopt_fig11_12 import (  # noqa: E402
    GIGA,
    GPUS,
    OCS_PERIOD_S,
    SERVERS,
    components,
    iteration_s,
    local_timer,
    static_fabrics,
)

SERVER_COUNTS = (16, 32, 64, 128, 256, 432, 1024, 2048, 4394)
LATENCIES_S = (1e-6, 1e-5, 1e-4, 1e-3, 1e-2)
PAPER_COST = {"OCS / patch-panel TopoOpt (mean)": 1.33, "Ideal Switch / TopoOpt (mean)": 3.2,
              "Ideal Switch / TopoOpt at 4,394 servers": 3.0}


def fig10(bandwidth_gbps: float = 100) -> pd.DataFrame:
    rows = []
    b = bandwidth_gbps * GIGA
    for degree in (4, 8):
        for n in SERVER_COUNTS:
            equivalent = cost.cost_equivalent_fat_tree_bandwidth_bps(n, degree, b)
            architectures = {
                "TopoOpt (patch panel)": cost.topoopt_cost(n, degree, b),
                "TopoOpt (OCS)": cost.topoopt_cost(n, degree, b, switch="ocs_3d_mems"),
                "OCS-reconfig": cost.ocs_reconfig_cost(n, degree, b),
                "Ideal Switch": cost.ideal_switch_cost(n, degree, b),
                "Fat-tree (cost-equivalent)": cost.fat_tree_cost(n, equivalent),
                "Oversub. Fat-tree": cost.fat_tree_cost(n, degree * b, oversubscription=2),
                "Expander": cost.expander_cost(n, degree, b),
            }
            for name, breakdown in architectures.items():
                rows.append({"degree": degree, "link_bandwidth_gbps": bandwidth_gbps, "num_servers": n,
                             "architecture": name, "capex_usd": breakdown.capex_usd, "power_w": breakdown.power_w,
                             "fat_tree_link_gbps": equivalent / GIGA if "cost-equivalent" in name else None})
    return pd.DataFrame(rows)


def fig17(degree: int = 8, bandwidth_gbps: float = 100) -> pd.DataFrame:
    rows = []
    for model in ("dlrm", "bert"):
        parts = components(model)
        workload = parts.model.build_workload(parts.parallel, parts.device.memory_bytes)
        traffic = server_traffic(workload, GPUS)
        plan = topology_finder(SERVERS, degree, traffic.allreduce, traffic.mp_matrix)
        fabric, algorithm = static_fabrics(plan, degree, bandwidth_gbps)["TopoOpt"]
        topoopt = iteration_s(workload, fabric, algorithm, parts)
        phases = workload_phases(workload, lambda task, c=parts.compute: c.estimate(task).time_s, GPUS,
                                 local_timer(degree, parts, GPUS))
        for latency in LATENCIES_S:
            rows.append({"model": model, "reconfiguration_s": latency, "series": "TopoOpt",
                         "iteration_time_s": topoopt})
            for forwarding in (True, False):
                policy = ReconfigPolicy(degree, bandwidth_gbps * GIGA, latency, OCS_PERIOD_S, forwarding, True)
                result = simulate_reconfigurable(phases, SERVERS, policy, iterations=3)
                rows.append({"model": model, "reconfiguration_s": latency,
                             "series": "OCS-reconfig-FW" if forwarding else "OCS-reconfig-noFW",
                             "iteration_time_s": result.steady_iteration_s,
                             "reconfigurations": result.reconfigurations})
    return pd.DataFrame(rows)


def comparison(costs: pd.DataFrame, f17: pd.DataFrame) -> list[dict]:
    table = costs.pivot_table(index=["degree", "num_servers"], columns="architecture", values="capex_usd")
    ocs = (table["TopoOpt (OCS)"] / table["TopoOpt (patch panel)"])
    ideal = (table["Ideal Switch"] / table["TopoOpt (patch panel)"])
    rows = [{"claim": f"Fig. 10: {name}", "paper": PAPER_COST[name], "ddlsim": round(float(ratio.mean()), 2)}
            for name, ratio in (("OCS / patch-panel TopoOpt (mean)", ocs), ("Ideal Switch / TopoOpt (mean)", ideal))]
    for degree in (4, 8):
        rows.append({"claim": f"Sec. 5.2: Ideal Switch / TopoOpt at 4,394 servers, d = {degree}",
                     "paper": PAPER_COST["Ideal Switch / TopoOpt at 4,394 servers"],
                     "ddlsim": round(float(ideal.loc[(degree, 4394)]), 2)})
    pivot = f17.pivot_table(index=["model", "reconfiguration_s"], columns="series", values="iteration_time_s")
    bert = pivot.loc["bert"].loc[1e-2]
    rows.append({"claim": "Fig. 17b BERT at 10 ms: FW / noFW", "paper": 1.4,
                 "ddlsim": round(float(bert["OCS-reconfig-FW"] / bert["OCS-reconfig-noFW"]), 2)})
    for model in ("dlrm", "bert"):
        fast = pivot.loc[model].loc[1e-6]
        rows.append({"claim": f"Fig. 17 {model} at 1 us: noFW / TopoOpt", "paper": "about 1",
                     "ddlsim": round(float(fast["OCS-reconfig-noFW"] / fast["TopoOpt"]), 2)})
    dlrm = pivot.loc["dlrm"].loc[1e-2]
    rows.append({"claim": "Fig. 17a DLRM at 10 ms: FW / noFW", "paper": "< 1",
                 "ddlsim": round(float(dlrm["OCS-reconfig-FW"] / dlrm["OCS-reconfig-noFW"]), 2)})
    return rows


def plot(costs: pd.DataFrame, f17: pd.DataFrame, out: Path) -> list[Path]:
    costs = costs.assign(capex_musd=costs.capex_usd / 1e6)
    paths = line_chart(panels_by(costs, "degree", lambda degree: f"d = {degree}, B = 100 Gbps"),
                       Quantity("num_servers", "servers", "count"),
                       Quantity("capex_musd", "network cost (million USD)"),
                       "architecture", out, "fig10", legend_title="architecture",
                       title="TopoOpt Fig. 10 reproduced (ddlsim): interconnect cost")
    return paths + line_chart(panels_by(f17, "model", lambda model: f"{model}, d = 8, B = 100 Gbps"),
                              Quantity("reconfiguration_s", "reconfiguration latency", "time_s"),
                              Quantity("iteration_time_s", "iteration time", "time_s"), "series", out, "fig17",
                              title="TopoOpt Fig. 17 reproduced (ddlsim)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    parser.add_argument("--out", type=Path, default=Path("reproductions") / "topoopt_fig10_17")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    costs, f17 = fig10(), fig17()
    args.out.mkdir(parents=True, exist_ok=True)
    costs.to_csv(args.out / "fig10.csv", index=False)
    f17.to_csv(args.out / "fig17.csv", index=False)
    claims = comparison(costs, f17)
    pd.DataFrame(claims).to_csv(args.out / "comparison.csv", index=False)
    table = costs.pivot_table(index=["degree", "num_servers"], columns="architecture", values="capex_usd") / 1e6
    print("Fig. 10: network cost (million USD), B = 100 Gbps\n" + table.round(2).to_string())
    table = f17.pivot_table(index=["model", "reconfiguration_s"], columns="series", values="iteration_time_s") * 1e3
    print("\nFig. 17: iteration time (ms), d = 8, B = 100 Gbps\n" + table.round(1).to_string())
    print("\nPaper vs ddlsim:\n" + format_table(claims, {key: str for key in claims[0]}))
    paths = plot(costs, f17, args.out)
    print("\nwrote", *(args.out / name for name in ("fig10.csv", "fig17.csv", "comparison.csv")), *paths)
    print(f"took {time.perf_counter() - started:.1f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
