#!/usr/bin/env python
"""Reproduce WRHT Table 1 (communication steps, N = 1,024, w = 64) and Section 4's numbers.

Every "ours" value comes from a schedule priced by ddlsim's estimator on the optical ring
(`fabric=optical_ring`), not from the formulas, which are printed beside it. Also reports the
motivating example of Fig. 2 (15 nodes, 2 wavelengths), the wavelengths first fit assigns to
each WRHT step against Section 4.1.2's counts, and the maximum group size m' that Eqs. 7 to 13
give for the default device parameters. Writes under --out (default ./reproductions/wrht_table1/):

    table1.csv, fig2_example.csv, wavelengths.csv, optical_budget.csv, table1.png and .pdf

    python scripts/wrht_table1.py
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

from ddlsim.catalog import load_all
from ddlsim.errors import InfeasibleError
from ddlsim.network import CollectiveEstimator, make_fabric
from ddlsim.network.collectives import wrht
from ddlsim.network.collectives.base import ScheduleRequest
from ddlsim.network.fabrics.optical_ring import rwa
from ddlsim.network.fabrics.optical_ring.budget import max_communication_length, required_snr
from ddlsim.registry import ALGORITHMS
from ddlsim.report.charts import Panel, Quantity, bar_chart
from ddlsim.report.table import format_table

TEXT = str


def steps(fabric, algorithm, num_ranks: int) -> int:
    return CollectiveEstimator(fabric, algorithm, device=None).estimate("all_reduce", 1 << 20,
                                                                        num_ranks=num_ranks).num_steps


def table1() -> list[dict]:
    n, w = 1024, 64
    fabric = make_fabric("optical_ring", num_nodes=n, wavelengths=w, optical_constraints=False)
    rows = [
        ("Ring", "2(N-1)", wrht.ring_steps(n), 2046, steps(fabric, "ring", n), "core ring"),
        ("H-Ring (m=5)", "2(m^2+N)/m-3", wrht.hring_steps(n, 5, w), 417, steps(fabric, {"name": "hring", "m": 5}, n),
         "hring: 2(m-1) + 2(ceil(N/m)-1)"),
        ("BT", "2 ceil(log2 N)", wrht.binary_tree_steps(n), 20, steps(fabric, "binomial_tree", n), "binomial_tree"),
        ("WRHT (m=129)", "2 ceil(log_m N) - 1", wrht.num_steps(n, 129, w), 3,
         steps(fabric, {"name": "wrht", "m": 129}, n), "wrht, all-to-all among 8 representatives"),
    ]
    return [dict(zip(("algorithm", "formula", "formula_steps", "paper_steps", "ours_steps", "ours_from"), row))
            for row in rows]


def fig2_example() -> list[dict]:
    fabric = make_fabric("optical_ring", num_nodes=15, wavelengths=2, optical_constraints=False)
    plan = wrht.wrht_plan(15, 5, 2)
    groups = [plan[0].members[plan[0].group_of == g].tolist() for g in range(plan[0].reps.size)]
    return [{"algorithm": "BT", "paper_steps": 8, "ours_steps": steps(fabric, "binomial_tree", 15), "detail": ""},
            {"algorithm": "WRHT (m=5)", "paper_steps": 3, "ours_steps": steps(fabric, {"name": "wrht", "m": 5}, 15),
             "detail": f"groups {groups}, representatives {plan[0].reps.tolist()}"}]


def wavelength_rows() -> list[dict]:
    """First-fit channels of each WRHT step against the paper's per-step counts."""
    rows = []
    for n, m, w in ((1024, 129, 64), (1024, 9, 4), (2048, 129, 64), (4096, 129, 64)):
        fabric = make_fabric("optical_ring", num_nodes=n, wavelengths=w, optical_constraints=False)
        algorithm = ALGORITHMS.make("wrht", m=m)
        request = ScheduleRequest.single_group("all_reduce", n, fabric)
        for index, stage in enumerate(algorithm.plan(request)):
            src, dst = stage.transfers()
            result = rwa.assign(src, dst, n)
            if stage.kind is wrht.StageKind.ALL_TO_ALL:
                paper = wrht.all_to_all_wavelengths(stage.members.size)
            else:
                paper = wrht.group_wavelengths(int(min(m, stage.members.size)))
            rows.append({"N": n, "m": m, "w": w, "step": index + 1, "kind": stage.kind.value,
                         "members": int(stage.members.size), "paper_wavelengths": paper,
                         "first_fit_cw": result.cw_channels, "first_fit_ccw": result.ccw_channels,
                         "longest_lightpath_hops": result.max_hops})
    return rows


def budget_rows() -> list[dict]:
    fabric = make_fabric("optical_ring")
    budget = fabric.spec.budget
    rows = []
    for n in (128, 256, 512, 1024, 2048, 4096, 8192):
        try:
            m_prime = budget.max_group_size(n)
        except InfeasibleError:
            rows.append({"N": n, "m_prime": "none", "eq7_L_max": "", "loss_db": "", "margin_db": "", "snr": "",
                         "ber": "", "routed_longest_hops": ""})
            continue
        length = max_communication_length(n, m_prime)
        plan = wrht.wrht_plan(n, m_prime, fabric.wavelengths)
        routed = max(rwa.assign(*stage.transfers(), n).max_hops for stage in plan)
        rows.append({"N": n, "m_prime": m_prime, "eq7_L_max": length,
                     "loss_db": round(budget.insertion_loss_db(length), 2),
                     "margin_db": round(budget.power_margin_db(length), 2), "snr": round(budget.snr(length), 1),
                     "ber": f"{budget.ber(length):.2e}", "routed_longest_hops": routed})
    return rows


def plot(rows: list[dict], out: Path) -> list[Path]:
    frame = pd.DataFrame(rows)
    long = pd.concat([frame.assign(source="paper (Table 1)", steps=frame.paper_steps),
                      frame.assign(source="ddlsim schedule", steps=frame.ours_steps)])
    long = long.assign(order=long.algorithm.map(list(frame.algorithm).index)).sort_values("order", kind="stable")
    return bar_chart([Panel(long)], "algorithm", Quantity("steps", "communication steps"), "source", out, "table1",
                     category_label="algorithm", annotate=True, legend_title="steps from",
                     title="WRHT Table 1: N = 1024, w = 64")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    parser.add_argument("--out", type=Path, default=Path("reproductions") / "wrht_table1")
    args = parser.parse_args(argv)
    load_all()
    args.out.mkdir(parents=True, exist_ok=True)

    sections = [
        ("table1", "Table 1: communication steps, N = 1024, w = 64", table1()),
        ("fig2_example", "Fig. 2: 15 nodes, 2 wavelengths", fig2_example()),
        ("wavelengths", "Wavelengths per WRHT step: Section 4.1.2 vs first fit (per direction)", wavelength_rows()),
        ("optical_budget", f"Eqs. 7-13 with the default device parameters (BER 1e-9 needs SNR >= "
                           f"{required_snr(1e-9):.1f}): largest group size m'", budget_rows()),
    ]
    for stem, title, rows in sections:
        print(f"\n{title}\n" + format_table(rows, {key: TEXT for key in rows[0]}))
        pd.DataFrame(rows).to_csv(args.out / f"{stem}.csv", index=False)
    paths = plot(sections[0][2], args.out)
    print(f"\nwrote {args.out}/*.csv and", *paths)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
