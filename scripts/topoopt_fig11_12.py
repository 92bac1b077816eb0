#!/usr/bin/env python
"""Reproduce TopoOpt Fig. 11 (dedicated cluster) and Figs. 12-14 (all-to-all traffic, bandwidth tax,
path length) with ddlsim.

Fig. 11: iteration time of DLRM, CANDLE, BERT, NCF, ResNet-50 and VGG-16 (List 1, Sec. 5.3 sizes,
the workload room's `model=topoopt`) on 128 servers of 4 A100 GPUs, d = 4, for link bandwidths
B = 10 to 200 Gbps, on seven fabrics: TopoOpt (TopologyFinder on the model's traffic), the Ideal
Switch (d x B per server), the cost-equivalent full-bisection fat-tree (d x B' per server, B'
from the appendix G cost model), the 2:1 oversubscribed fat-tree (d x B), a random expander of
degree d, OCS-reconfig (Algorithm 5 every 50 ms, 10 ms pauses, host forwarding; d OCS ports per
server) and SiP-ML (Algorithm 5 without discount on every demand change, 25 us, no forwarding; d
wavelengths of B per GPU, Sec. 5.1). All-reduce is ring-based (between servers; a ring inside servers) and all-to-all is
direct, as in Sec. 5.1; compute is the A100 roofline; no overlap.

Fig. 12-14: DLRM with 128 embedding tables (one per server, Sec. 5.4) at B = 100 Gbps and
d = 4 and 8, batch per GPU 64 to 2048: iteration time on TopoOpt, the Ideal Switch and the
fat-tree, the all-to-all / AllReduce traffic ratio, TopoOpt's bandwidth tax and mean path length.

Writes under --out (default ./reproductions/topoopt_fig11_12/): fig11.csv, fig12.csv,
fig13_14.csv, comparison.csv and fig11, fig12, fig13_14 (PNG and PDF).

    python scripts/topoopt_fig11_12.py            # everything (about a minute on 2 cores)
    python scripts/topoopt_fig11_12.py --quick    # B = 25 and 100 Gbps, batches 64/512/2048
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

import ddlsim  # noqa: E402
from ddlsim.network import CollectiveEstimator, make_fabric  # noqa: E402
from ddlsim.network.fabrics.topoopt.cost import cost_equivalent_fat_tree_bandwidth_bps  # noqa: E402
from ddlsim.network.fabrics.topoopt.demand import server_traffic  # noqa: E402
from ddlsim.network.fabrics.topoopt.fabric import TopoOptFabric  # noqa: E402
from ddlsim.network.fabrics.topoopt.reconfig_sim import (  # noqa: E402
    ReconfigPolicy,
    simulate_reconfigurable,
    workload_phases,
)
from ddlsim.network.fabrics.topoopt.topology_finder import topology_finder  # noqa: E402
from ddlsim.report.charts import Panel, Quantity, line_chart, panels_by  # noqa: E402
from ddlsim.report.table import format_table  # noqa: E402
from ddlsim.training import Pricer, TrainingSettings, simulate_training  # noqa: E402
from ddlsim.training.run import reduction_model  # noqa: E402
from ddlsim.types import CollectiveOp, Precision, Workload  # noqa: E402
from ddlsim.workload.dlrm_partition import partition_dlrm  # noqa: E402
from ddlsim.workload.dlrm_tasks import dlrm_blocks  # noqa: E402
from ddlsim.workload.models.topoopt import DLRM  # noqa: E402

GIGA = 1e9
SERVERS, GPUS = 128, 4
MODELS = ("dlrm", "candle", "bert", "ncf", "resnet50", "vgg16")
BANDWIDTHS_GBPS = (10, 25, 40, 100, 200)
BATCHES = (64, 128, 256, 512, 1024, 2048)
FABRICS = ("TopoOpt", "Ideal Switch", "Fat-tree", "Oversub. Fat-tree", "Expander", "OCS-reconfig", "SiP-ML")
OCS_RECONFIGURATION_S, OCS_PERIOD_S, SIPML_RECONFIGURATION_S = 10e-3, 50e-3, 25e-6

# What the paper's text states about Fig. 11 (Sec. 5.3): Fat-tree / TopoOpt iteration time,
# averaged over link bandwidths, and Ideal Switch's gain over TopoOpt.
PAPER_FATTREE_OVER_TOPOOPT = {"candle": 2.8, "vgg16": 2.8, "bert": 3.0, "dlrm": 2.8, "ncf": 2.1}
PAPER_TOPOOPT_OVER_IDEAL = {"dlrm": 1.3, "ncf": 1.7}
# Sec. 5.4 / 5.5 (Figs. 12-14): DLRM with 128 tables, B = 100 Gbps.
PAPER_FIG12 = {("fat_tree_over_topoopt", 4, 128): 2.7, ("topoopt_over_fat_tree", 4, 2048): 1.1,
               ("all_to_all_over_allreduce", 4, 2048): 0.8}
PAPER_TAX = {(4, 64): 1.11, (8, 64): 1.05, (4, 2048): 3.03}
PAPER_PATH_LENGTH = {4: 5.7, 8: 3.0}


def components(model: str):
    return ddlsim.build_components(["experiment=single", "model=topoopt", f"model.model={model}"])


def paper_timer(fabric, ring_algorithm: str, reduction):
    """Ring-based all-reduce and direct all-to-all (Sec. 5.1), one estimator per algorithm."""
    estimators = {name: CollectiveEstimator(fabric, name, reduction) for name in (ring_algorithm, "direct", "best")}

    def timer(call):
        if call.op in (CollectiveOp.ALL_REDUCE, CollectiveOp.REDUCE_SCATTER, CollectiveOp.ALL_GATHER):
            return estimators[ring_algorithm](call)
        return estimators["direct" if call.op is CollectiveOp.ALL_TO_ALL else "best"](call)

    return timer


def iteration_s(workload: Workload, fabric, ring_algorithm: str, parts) -> float:
    reduction = reduction_model(parts.device, Precision.FP32)
    pricer = Pricer(paper_timer(fabric, ring_algorithm, reduction), parts.compute.estimate)
    return simulate_training(workload, pricer, TrainingSettings(), fabric=fabric).iteration.iteration_time_s


def static_fabrics(plan, degree: int, bandwidth_gbps: float) -> dict[str, tuple[object, str]]:
    """The fabrics priced through the estimator, with the ring algorithm each uses."""
    per_gpu = degree * bandwidth_gbps / GPUS
    equivalent = cost_equivalent_fat_tree_bandwidth_bps(SERVERS, degree, bandwidth_gbps * GIGA) / GIGA / GPUS
    return {
        "TopoOpt": (TopoOptFabric.for_plan(plan, bandwidth_gbps * GIGA, gpus_per_server=GPUS), "topoopt_ring"),
        "Ideal Switch": (make_fabric("topoopt_ideal", nic_bandwidth=f"{per_gpu:g}Gbps"), "hierarchical"),
        "Fat-tree": (make_fabric("topoopt_fat_tree", nic_bandwidth=f"{equivalent:.6g}Gbps"), "hierarchical"),
        "Oversub. Fat-tree": (make_fabric("topoopt_fat_tree_oversub", nic_bandwidth=f"{per_gpu:g}Gbps"),
                              "hierarchical"),
        "Expander": (make_fabric("expander", degree=degree, link_bandwidth=f"{bandwidth_gbps:g}Gbps"),
                     "hierarchical"),
    }


def local_timer(degree: int, parts, gpus_per_node: int):
    """Time a collective spends off the circuits (inside servers, local reductions): the estimator
    on TopoOpt with unbounded links, so that the fluid engine of the reconfigurable fabrics adds
    exactly what the estimator charges the other fabrics for that part."""
    unbounded = TopoOptFabric(num_servers=SERVERS * GPUS // gpus_per_node, degree=degree, link_bandwidth_bps=1e21,
                              link_latency_s=0.0, gpus_per_server=gpus_per_node)
    timer = paper_timer(unbounded, "topoopt_ring", reduction_model(parts.device, Precision.FP32))
    return lambda call: timer(call).time_s


def reconfigurable_s(workload: Workload, parts, degree: int, bandwidths: tuple[float, ...]) -> list[dict]:
    """OCS-reconfig (per server: d OCS ports, 50 ms epochs, 10 ms pauses, forwarding) and SiP-ML
    (per GPU: d wavelengths of B, Sec. 5.1, rebuilt on every demand change, 25 us, no forwarding)."""
    compute = lambda task: parts.compute.estimate(task).time_s  # noqa: E731
    per_server = workload_phases(workload, compute, GPUS, local_timer(degree, parts, GPUS))
    per_gpu = workload_phases(workload, compute, 1, local_timer(degree, parts, 1))
    rows = []
    for bandwidth in bandwidths:
        ocs = ReconfigPolicy(degree, bandwidth * GIGA, OCS_RECONFIGURATION_S, OCS_PERIOD_S, True, True)
        sipml = ReconfigPolicy(degree, bandwidth * GIGA, SIPML_RECONFIGURATION_S, None, False, False)
        rows.append({"link_bandwidth_gbps": bandwidth, "fabric": "OCS-reconfig", "iteration_time_s":
                     simulate_reconfigurable(per_server, SERVERS, ocs, iterations=2).steady_iteration_s})
        rows.append({"link_bandwidth_gbps": bandwidth, "fabric": "SiP-ML", "iteration_time_s":
                     simulate_reconfigurable(per_gpu, SERVERS * GPUS, sipml, iterations=2).steady_iteration_s})
    return rows


def fig11(bandwidths: tuple[float, ...], degree: int = 4) -> pd.DataFrame:
    rows = []
    for model in MODELS:
        parts = components(model)
        workload = parts.model.build_workload(parts.parallel, parts.device.memory_bytes)
        traffic = server_traffic(workload, GPUS)
        plan = topology_finder(SERVERS, degree, traffic.allreduce, traffic.mp_matrix)
        labels = {"model": model, "degree": degree, "allreduce_degree": plan.allreduce_degree,
                  "mp_degree": plan.mp_degree, "rings": " ".join(str(p) for r in plan.rings for p in r.rules)}
        for bandwidth in bandwidths:
            for name, (fabric, algorithm) in static_fabrics(plan, degree, bandwidth).items():
                rows.append({**labels, "link_bandwidth_gbps": bandwidth, "fabric": name,
                             "iteration_time_s": iteration_s(workload, fabric, algorithm, parts)})
        rows += [{**labels, **row} for row in reconfigurable_s(workload, parts, degree, bandwidths)]
    return pd.DataFrame(rows)


def dlrm_128_tables(batch: int, memory_bytes: int) -> Workload:
    """Sec. 5.4's DLRM: 128 large tables, one per server, the other List 1 sizes of Sec. 5.3."""
    shape = replace(DLRM, num_tables=128)
    plan = partition_dlrm(shape, SERVERS * GPUS, memory_bytes, local_batch=batch, sharding="table_wise", value_bytes=4)
    return Workload(f"dlrm128:b{batch}", SERVERS * GPUS, dlrm_blocks(plan, Precision.FP32), plan.global_batch)


def fig12(batches: tuple[int, ...], bandwidth_gbps: float = 100) -> tuple[pd.DataFrame, pd.DataFrame]:
    parts = components("dlrm")
    rows, taxes = [], []
    for batch in batches:
        workload = dlrm_128_tables(batch, parts.device.memory_bytes)
        traffic = server_traffic(workload, GPUS)
        ratio = traffic.mp_bytes / traffic.allreduce_bytes
        for degree in (4, 8):
            plan = topology_finder(SERVERS, degree, traffic.allreduce, traffic.mp_matrix)
            fabrics = static_fabrics(plan, degree, bandwidth_gbps)
            for name in ("TopoOpt", "Ideal Switch", "Fat-tree"):
                fabric, algorithm = fabrics[name]
                rows.append({"batch_per_gpu": batch, "degree": degree, "fabric": name,
                             "iteration_time_s": iteration_s(workload, fabric, algorithm, parts),
                             "all_to_all_over_allreduce": ratio})
            src, dst = np.nonzero(traffic.mp_matrix)
            mp_link_bytes = plan.topology.link_loads(src, dst, traffic.mp_matrix[src, dst]).sum()
            demand = traffic.allreduce_bytes + traffic.mp_bytes
            taxes.append({"batch_per_gpu": batch, "degree": degree, "all_to_all_over_allreduce": ratio,
                          "bandwidth_tax": (traffic.allreduce_bytes + mp_link_bytes) / demand,
                          "mp_bandwidth_tax": mp_link_bytes / traffic.mp_bytes,
                          "mean_path_length": plan.topology.mean_path_length(),
                          "allreduce_degree": plan.allreduce_degree, "mp_degree": plan.mp_degree})
    return pd.DataFrame(rows), pd.DataFrame(taxes)


def comparison(f11: pd.DataFrame, f12: pd.DataFrame, tax: pd.DataFrame) -> list[dict]:
    table = f11.pivot_table(index=["model", "link_bandwidth_gbps"], columns="fabric", values="iteration_time_s")
    rows = []
    for model, paper in PAPER_FATTREE_OVER_TOPOOPT.items():
        part = table.loc[model]
        rows.append({"claim": f"Fig. 11 {model}: Fat-tree / TopoOpt (mean over B)", "paper": paper,
                     "ddlsim": round(float((part["Fat-tree"] / part["TopoOpt"]).mean()), 2)})
    for model, paper in PAPER_TOPOOPT_OVER_IDEAL.items():
        part = table.loc[model]
        rows.append({"claim": f"Fig. 11 {model}: TopoOpt / Ideal Switch (mean over B)", "paper": paper,
                     "ddlsim": round(float((part["TopoOpt"] / part["Ideal Switch"]).mean()), 2)})
    pivot = f12.pivot_table(index=["degree", "batch_per_gpu"], columns="fabric", values="iteration_time_s")
    for (kind, degree, batch), paper in PAPER_FIG12.items():
        if (degree, batch) not in pivot.index:
            continue
        point = pivot.loc[(degree, batch)]
        ratio = float(f12[f12.batch_per_gpu == batch].all_to_all_over_allreduce.iloc[0])
        value = {"fat_tree_over_topoopt": point["Fat-tree"] / point["TopoOpt"],
                 "topoopt_over_fat_tree": point["TopoOpt"] / point["Fat-tree"],
                 "all_to_all_over_allreduce": ratio}[kind]
        rows.append({"claim": f"Fig. 12 d={degree} batch {batch}: {kind.replace('_', ' ')}", "paper": paper,
                     "ddlsim": round(float(value), 2)})
    for (degree, batch), paper in PAPER_TAX.items():
        match = tax.query("degree == @degree and batch_per_gpu == @batch")
        if len(match):
            rows.append({"claim": f"Fig. 13 d={degree} batch {batch}: bandwidth tax", "paper": paper,
                         "ddlsim": round(float(match.bandwidth_tax.iloc[0]), 2)})
    for degree, paper in PAPER_PATH_LENGTH.items():
        match = tax.query("degree == @degree")
        rows.append({"claim": f"Fig. 14 d={degree}: mean path length (hops)", "paper": paper,
                     "ddlsim": f"{match.mean_path_length.min():.2f}-{match.mean_path_length.max():.2f}"})
    return rows


def plot_fig11(frame: pd.DataFrame, out: Path) -> list[Path]:
    frame = frame.assign(order=frame.fabric.map(list(FABRICS).index)).sort_values(["order", "link_bandwidth_gbps"])
    return line_chart(panels_by(frame, "model"), Quantity("link_bandwidth_gbps", "link bandwidth B (Gb/s)"),
                      Quantity("iteration_time_s", "iteration time", "time_s"), "fabric", out, "fig11",
                      legend_title="fabric", title="TopoOpt Fig. 11 reproduced (ddlsim): 128 servers, d = 4")


def plot_fig12(frame: pd.DataFrame, tax: pd.DataFrame, out: Path) -> list[Path]:
    frame = frame[frame.fabric.isin(("TopoOpt", "Ideal Switch", "Fat-tree"))]
    paths = line_chart(panels_by(frame, "degree", lambda degree: f"d = {degree}, B = 100 Gbps"),
                       Quantity("batch_per_gpu", "batch per GPU", "count"),
                       Quantity("iteration_time_s", "iteration time", "time_s"), "fabric", out, "fig12",
                       legend_title="fabric",
                       title="TopoOpt Fig. 12 reproduced (ddlsim): DLRM, 128 tables on 128 servers")
    tax = tax.assign(d=tax.degree.map(lambda degree: f"d = {degree}"))
    chart = [Panel(tax, "Fig. 13: bandwidth tax", y=Quantity("bandwidth_tax", "bandwidth tax")),
             Panel(tax, "Fig. 14: path length", y=Quantity("mean_path_length", "mean path length (hops)"))]
    return paths + line_chart(chart, Quantity("batch_per_gpu", "batch per GPU", "count"), chart[0].y, "d", out,
                              "fig13_14", columns=2, legend_title="degree")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    parser.add_argument("--out", type=Path, default=Path("reproductions") / "topoopt_fig11_12")
    parser.add_argument("--quick", action="store_true", help="fewer bandwidths and batch sizes")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    bandwidths = (25, 100) if args.quick else BANDWIDTHS_GBPS
    batches = (64, 512, 2048) if args.quick else BATCHES
    f11 = fig11(bandwidths)
    f12, tax = fig12(batches)
    args.out.mkdir(parents=True, exist_ok=True)
    f11.to_csv(args.out / "fig11.csv", index=False)
    f12.to_csv(args.out / "fig12.csv", index=False)
    tax.to_csv(args.out / "fig13_14.csv", index=False)
    claims = comparison(f11, f12, tax)
    pd.DataFrame(claims).to_csv(args.out / "comparison.csv", index=False)
    table = f11.pivot_table(index=["model", "link_bandwidth_gbps"], columns="fabric", values="iteration_time_s") * 1e3
    print("Fig. 11: iteration time (ms), 128 servers x 4 GPUs, d = 4\n" + table[list(FABRICS)].round(1).to_string())
    table = f12.pivot_table(index=["degree", "batch_per_gpu"], columns="fabric", values="iteration_time_s") * 1e3
    print("\nFig. 12: DLRM, 128 tables, B = 100 Gbps, iteration time (ms)\n" + table.round(1).to_string())
    print("\nFigs. 13-14:\n" + tax.round(3).to_string(index=False))
    print("\nPaper vs ddlsim:\n" + format_table(claims, {key: str for key in claims[0]}))
    paths = [*plot_fig11(f11, args.out), *plot_fig12(f12, tax, args.out)]
    print("\nwrote", *(args.out / name for name in ("fig11.csv", "fig12.csv", "fig13_14.csv", "comparison.csv")),
          *paths)
    print(f"took {time.perf_counter() - started:.1f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
