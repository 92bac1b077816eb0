#!/usr/bin/env python
"""Reproduce RAMP Fig. 19: RAMP's speed-up over bandwidth-matched baselines, 0.2 to 12.8 Tbps.

Every system gets the same node bandwidth C and no oversubscription (RAMP 8.3): RAMP with
32 transceiver groups of C / 32; the SuperPod fat-tree with NVLink and NICs both at C; the
128 x 512 torus at C; TopoOpt (`topoopt_ramp`) with its ring circuits at C. 1 GB, 65,536 nodes, best strategy
per system as in Fig. 18 (`ramp_fig18.py`). The paper states: speed-ups of 1.04x to 2.24e3x
depending on collective and rate; up to 32x over the fat-tree (broadcast) and 27x over TopoOpt
(all-gather, scatter) at high rates; all-to-all 3x to 2.2e4x; the fat-tree is the best
baseline apart from broadcast. Writes results.csv, speedups.csv, comparison.csv and fig19
(PNG and PDF) under --out (default ./reproductions/ramp_fig19/).

    python scripts/ramp_fig19.py
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd
from ramp_fig18 import OPS, STRATEGIES, best_times, systems

from ddlsim.catalog import load_all
from ddlsim.report.charts import Guide, Quantity, line_chart, panels_by
from ddlsim.report.style import op_name
from ddlsim.report.table import format_table

CAPACITIES_TBPS = (0.2, 0.4, 0.8, 1.6, 3.2, 6.4, 12.8)
BASELINES = [system for system in STRATEGIES if system != "RAMP"]


def run() -> pd.DataFrame:
    frames = []
    for capacity in CAPACITIES_TBPS:
        best = best_times(systems(f"{capacity}Tbps"))
        frames.append(best.assign(capacity_tbps=capacity))
    return pd.concat(frames, ignore_index=True)


def speedup_table(frame: pd.DataFrame) -> pd.DataFrame:
    times = frame.pivot_table(index=["capacity_tbps", "op"], columns="system", values="time_s")
    return pd.DataFrame({system: times[system] / times["RAMP"] for system in BASELINES})


def comparison(ratio: pd.DataFrame, frame: pd.DataFrame) -> list[dict]:
    low, high = CAPACITIES_TBPS[0], CAPACITIES_TBPS[-1]
    every = ratio.stack()
    a2a = ratio.xs("all_to_all", level="op").stack()
    best_baseline = frame[frame.system != "RAMP"].loc[lambda f: f.groupby(["capacity_tbps", "op"]).time_s.idxmin()]
    non_broadcast = best_baseline[best_baseline.op != "broadcast"]
    return [
        {"claim": "speed-up range over all ops, rates, baselines", "paper": "1.04 - 2.24e3",
         "ddlsim": f"{every.min():.2f} - {every.max():.3g}"},
        {"claim": f"vs Fat-Tree, broadcast, at {high} Tbps", "paper": "up to 32",
         "ddlsim": f"{ratio.loc[(high, 'broadcast'), 'Fat-Tree']:.1f} (at {low} Tbps: "
                   f"{ratio.loc[(low, 'broadcast'), 'Fat-Tree']:.1f})"},
        {"claim": f"vs TopoOpt, all-gather / scatter, at {high} Tbps", "paper": "up to 27",
         "ddlsim": f"{ratio.loc[(high, 'all_gather'), 'TopoOpt']:.1f} / {ratio.loc[(high, 'scatter'), 'TopoOpt']:.1f}"},
        {"claim": "all-to-all speed-up range", "paper": "3 - 2.2e4", "ddlsim": f"{a2a.min():.3g} - {a2a.max():.3g}"},
        {"claim": "best baseline apart from broadcast", "paper": "always Fat-Tree",
         "ddlsim": ", ".join(f"{k}: {v}" for k, v in non_broadcast.system.value_counts().items())},
    ]


def plot(ratio: pd.DataFrame, out: Path) -> list[Path]:
    long = ratio.reset_index().melt(id_vars=["capacity_tbps", "op"], var_name="system", value_name="speedup")
    long = long.assign(op_order=long["op"].map(list(OPS).index)).sort_values(["op_order", "system"], kind="stable")
    return line_chart(panels_by(long, "op", op_name), Quantity("capacity_tbps", "node capacity (Tb/s)"),
                      Quantity("speedup", "speed-up of RAMP (x)"), "system", out, "fig19", columns=4,
                      legend_title="RAMP vs", guides=[Guide(1.0)],
                      title="RAMP Fig. 19 reproduced (ddlsim): bandwidth-matched baselines, 1 GB, 65,536 nodes")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    parser.add_argument("--out", type=Path, default=Path("reproductions") / "ramp_fig19")
    args = parser.parse_args(argv)
    load_all()
    frame = run()
    ratio = speedup_table(frame)
    args.out.mkdir(parents=True, exist_ok=True)
    frame.to_csv(args.out / "results.csv", index=False)
    ratio.to_csv(args.out / "speedups.csv")
    claims = comparison(ratio, frame)
    pd.DataFrame(claims).to_csv(args.out / "comparison.csv", index=False)
    print("RAMP speed-up over bandwidth-matched baselines (rows: Tbps, op):\n" + ratio.round(2).to_string())
    print("\nPaper vs ddlsim:\n" + format_table(claims, {key: str for key in claims[0]}))
    print("\nwrote", args.out / "results.csv", args.out / "speedups.csv", args.out / "comparison.csv",
          *plot(ratio, args.out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
