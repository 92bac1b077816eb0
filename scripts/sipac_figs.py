#!/usr/bin/env python
"""Reproduce SiPAC Figs. 7, 10 and 11: all-reduce alpha-beta curves and primitive traffic on 512 CUs.

Fig. 7 evaluates Table II (ring, mesh, hierarchical ring, SiPCO) with alpha = 1 us and a link of
512 Gb/s: against the number of CUs at 100 MB and against the message size at 1,024 CUs. SiPCO
uses r^L = p with L = 2 (L = 3 at 4,096); the hierarchical ring groups k = 8 CUs.

Figs. 10 and 11 send the three primitive traffic patterns of SiPAC VI-A (one-to-all and
all-to-one from a root drawn at random with seed 0, and all-to-all; every flow carries the
message size) over 512 CUs at 2,048 Gb/s per CU: SiPAC (r = 8, L = 3), the electronic BCube of
the same shape, a 16 x 32 2D torus, and the SuperPod of SiPAC VI-A (8 GPUs per DGX on NVLink at
2,048 Gb/s with 9 us latency, 8 x 200 Gb/s InfiniBand per DGX, 120 ns switches, two tiers).
Every link hop costs 1 us. A pattern's completion time is its price on the fabric (latency plus
transfer of the busiest resource; no collective algorithm). The paper reports, at 1 MB, SiPAC
3.6-5.3x faster than SuperPod, 1.4-5.9x than the torus and 1.4-3.4x than BCube. Writes CSVs and
fig7, fig10 and fig11 (PNG and PDF) under --out (default ./reproductions/sipac_figs/).

    python scripts/sipac_figs.py
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pandas as pd

from ddlsim.catalog import load_all
from ddlsim.network import make_fabric
from ddlsim.network.collectives.sipco_logic import table2_terms
from ddlsim.network.patterns import Mesh, Pairs
from ddlsim.report.charts import Panel, Quantity, bar_chart, line_chart, panels_by
from ddlsim.report.table import format_table
from ddlsim.types import GroupLayout

ALPHA_S, BETA_S_PER_BYTE = 1e-6, 8 / 512e9
FIG7_SIZES = (16, 64, 256, 1024, 4096)
FIG7_MESSAGES = tuple(10 ** e for e in range(3, 10))
SIPCO_SHAPE = {16: (4, 2), 64: (8, 2), 256: (16, 2), 1024: (32, 2), 4096: (16, 3)}
CUS = 512
MESSAGES = tuple(10 ** e for e in range(2, 10))  # 100 B to 1 GB
PATTERNS = ("one-to-all", "all-to-one", "all-to-all")
PAPER_1MB = {"SuperPod": (3.6, 5.3), "2D-Torus": (1.4, 5.9), "BCube": (1.4, 3.4)}


def fig7() -> pd.DataFrame:
    rows = []
    for sweep, p, n in [("cus", p, 100e6) for p in FIG7_SIZES] + [("size", 1024, m) for m in FIG7_MESSAGES]:
        for algorithm in ("ring", "mesh", "h_ring", "sipco"):
            r, levels = SIPCO_SHAPE[p]
            latency, bandwidth = table2_terms(algorithm, p, n, ALPHA_S, BETA_S_PER_BYTE, r=r, levels=levels, k=8)
            rows.append({"sweep": sweep, "num_cus": p, "size_bytes": int(n), "algorithm": algorithm,
                         "latency_s": latency, "bandwidth_s": bandwidth, "time_s": latency + bandwidth})
    return pd.DataFrame(rows)


def systems() -> dict[str, object]:
    """SiPAC VI-A's systems; the torus and SuperPod are the `torus2d_sipac` and `superpod_sipac` variants."""
    return {"SiPAC": make_fabric("sipac"), "BCube": make_fabric("bcube"), "2D-Torus": make_fabric("torus2d_sipac"),
            "SuperPod": make_fabric("superpod_sipac")}


def pattern(kind: str, root: int):
    others = np.array([p for p in range(CUS) if p != root])
    if kind == "one-to-all":
        return Pairs(CUS, np.full(others.size, root), others)
    if kind == "all-to-one":
        return Pairs(CUS, others, np.full(others.size, root))
    return Mesh(CUS, np.zeros(CUS, dtype=np.int64))


def primitives() -> pd.DataFrame:
    """Both readings of "message size": every flow carries it (per_flow), or each sender's total
    is split evenly over its flows (per_cu: one-to-all and all-to-all send m / 511 per flow)."""
    root = int(np.random.default_rng(0).integers(CUS))
    layout = GroupLayout(CUS)
    sizes = np.array(MESSAGES, dtype=float)
    rows = []
    for system, fabric in systems().items():
        placement = fabric.place(CUS)
        for kind in PATTERNS:
            cost = fabric.price(pattern(kind, root), layout, placement)
            for meaning, per_flow in (("per_flow", sizes), ("per_cu", sizes / (CUS - 1))):
                transfer = fabric.transfer_time_s(per_flow, cost.s_per_unit)
                for size, seconds in zip(MESSAGES, transfer):
                    rows.append({"system": system, "pattern": kind, "size_meaning": meaning, "size_bytes": size,
                                 "root": root, "latency_s": cost.latency_s, "transfer_s": float(seconds),
                                 "time_s": cost.latency_s + float(seconds)})
    return pd.DataFrame(rows)


def at_1mb(frame: pd.DataFrame, meaning: str) -> pd.DataFrame:
    part = frame[(frame.size_bytes == 10**6) & (frame.size_meaning == meaning)]
    return part.pivot(index="pattern", columns="system", values="time_s").loc[list(PATTERNS)]


def comparison(frame: pd.DataFrame, curves: pd.DataFrame) -> list[dict]:
    rows = []
    for meaning in ("per_flow", "per_cu"):
        at = at_1mb(frame, meaning)
        for system, (low, high) in PAPER_1MB.items():
            ratio = at[system] / at["SiPAC"]
            rows.append({"claim": f"SiPAC speed-up over {system} at 1 MB {meaning} (1-to-all, all-to-1, all-to-all)",
                         "paper": f"{low}-{high}", "ddlsim": " / ".join(f"{ratio[k]:.2f}" for k in PATTERNS)})
    by_size = curves[curves.sweep == "cus"].pivot(index="num_cus", columns="algorithm", values="time_s")
    growth = by_size.loc[FIG7_SIZES[-1]] / by_size.loc[FIG7_SIZES[0]]
    rows.append({"claim": "Fig. 7: JCT growth from 16 to 4,096 CUs at 100 MB (SiPCO vs ring)",
                 "paper": "SiPCO relatively constant",
                 "ddlsim": f"sipco x{growth['sipco']:.2f}, ring x{growth['ring']:.2f}"})
    return rows


def plot(curves: pd.DataFrame, frame: pd.DataFrame, out: Path) -> list[Path]:
    time = Quantity("time_s", "all-reduce JCT", "time_s")
    size = Quantity("size_bytes", "message size", "size_bytes")
    sweeps = [Panel(curves[curves.sweep == "cus"], "100 MB messages", x=Quantity("num_cus", "CUs", "count")),
              Panel(curves[curves.sweep == "size"], "1,024 CUs", x=size)]
    paths = line_chart(sweeps, sweeps[0].x, time, "algorithm", out, "fig7", legend_title="algorithm",
                       title="SiPAC Fig. 7 reproduced (Table II, alpha = 1 us, 512 Gb/s)")
    per_flow = frame[frame.size_meaning == "per_flow"]
    paths += line_chart(panels_by(per_flow, "pattern"), Quantity("size_bytes", "message size per flow", "size_bytes"),
                        Quantity("time_s", "JCT", "time_s"), "system", out, "fig10", legend_title="system",
                        title="SiPAC Fig. 10 reproduced: 512 CUs, 2,048 Gb/s per CU")
    at_1mb_rows = frame[frame.size_bytes == 10**6]
    meanings = [Panel(at_1mb_rows[at_1mb_rows.size_meaning == meaning], f"1 MB {text}")
                for meaning, text in (("per_flow", "per flow"), ("per_cu", "per CU"))]
    return paths + bar_chart(meanings, "pattern", Quantity("time_s", "JCT at 1 MB", "time_s"), "system", out,
                             "fig11", category_label="traffic pattern", legend_title="system",
                             title="SiPAC Fig. 11 reproduced: 512 CUs at 1 MB")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    parser.add_argument("--out", type=Path, default=Path("reproductions") / "sipac_figs")
    args = parser.parse_args(argv)
    load_all()
    curves, frame = fig7(), primitives()
    args.out.mkdir(parents=True, exist_ok=True)
    curves.to_csv(args.out / "fig7.csv", index=False)
    frame.to_csv(args.out / "fig10_11.csv", index=False)
    claims = comparison(frame, curves)
    pd.DataFrame(claims).to_csv(args.out / "comparison.csv", index=False)
    print("Fig. 7, all-reduce JCT (ms) at 100 MB:\n" + (curves[curves.sweep == "cus"].pivot(
        index="num_cus", columns="algorithm", values="time_s") * 1e3).round(3).to_string())
    for meaning in ("per_flow", "per_cu"):
        print(f"\nFig. 11, JCT at 1 MB {meaning} (us):\n" + (at_1mb(frame, meaning) * 1e6).round(2).to_string())
    print("\nPaper vs ddlsim:\n" + format_table(claims, {key: str for key in claims[0]}))
    print("\nwrote", args.out / "fig7.csv", args.out / "fig10_11.csv", args.out / "comparison.csv",
          *plot(curves, frame, args.out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
