#!/usr/bin/env python
"""Reproduce Figs. 2 and 3 of Rombouts and Calabretta (2022): OPSquare vs the H100 leaf-spine.

Throughput, packet loss and mean packet latency vs offered load, for several traffic localities,
from the packet models in `ddlsim.network.packet` (20 us warm-up, 20 us measurement, 1,500-byte
packets, uniform random destinations). Writes under --out (default
./reproductions/opsquare_fig2_3/):

    results.csv        one row per (network, nodes, locality, load)
    comparison.csv     the paper's stated numbers beside ours (the paper gives its data only as
                       plots, so the comparison uses the numbers its text states)
    fig2_opsquare and fig3_leafspine (PNG and PDF)

The default quick mode (256 nodes, three localities, three loads) needs about 20 s of CPU;
--full runs both scales, localities 0, 0.33, 0.67 and 1 and loads 0.1 to 1.0 (see
benchmarks/bench_packet.py for its wall time).

    python scripts/opsquare_fig2_3.py            # quick
    python scripts/opsquare_fig2_3.py --full --jobs 4
    python scripts/opsquare_fig2_3.py --networks leafspine --localities 0.33 --buffer-policy dynamic
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import pandas as pd

from ddlsim.network.packet.experiment import NETWORKS, LoadSweep, run_sweep
from ddlsim.network.packet.leafspine_model import BUFFER_POLICIES
from ddlsim.network.packet.paper_claims import check_claims
from ddlsim.report.charts import Guide, Panel, Quantity, line_chart
from ddlsim.report.table import format_table

QUICK = LoadSweep(scales=(256,), localities=(0.0, 0.33, 0.67), loads=(0.2, 0.6, 1.0))
FULL = LoadSweep()

# The paper's stated latency bounds, drawn as reference lines (Section 3).
PAPER_LATENCY_LINES = {
    "opsquare": [(0.5e-6, "paper: intra-pod within 0.5 us"), (6e-6, "paper: inter-pod within 6 us")],
    "leafspine": [(1e-6, "paper: local about 1 us at low load"), (25e-6, "paper: inter-pod saturates at 25 us")],
}
TITLES = {"opsquare": "Fig. 2: OPSquare for ML", "leafspine": "Fig. 3: H100 leaf-spine"}


def plot_network(frame: pd.DataFrame, network: str, out: Path) -> list[Path]:
    """Throughput, loss and mean latency against offered load; colour per locality, line style per scale."""
    data = frame[frame.network == network].sort_values(["locality", "num_nodes", "load"])
    data = data.assign(share=data.locality.map(lambda value: f"{value:.0%} local"),
                       nodes=data.num_nodes.map(lambda value: f"{value:,} nodes"))
    loss = Quantity("loss_ratio", "packet loss ratio", scale="log")
    chart = [Panel(data, "(a) throughput", y=Quantity("throughput", "throughput (fraction of 3.6 Tb/s per node)")),
             Panel(data, "(b) packet loss (zero not drawn)", y=loss),
             Panel(data, "(c) packet latency", y=Quantity("latency_mean_s", "mean packet latency", "time_s", "log"))]
    guides = [Guide(1.0, "ideal", kind="ratio", panel=0)]
    guides += [Guide(value_s, text, panel=2) for value_s, text in PAPER_LATENCY_LINES[network]]
    stem = "fig2_opsquare" if network == "opsquare" else "fig3_leafspine"
    return line_chart(chart, Quantity("load", "offered load"), chart[0].y, "share", out, stem, variant="nodes",
                      guides=guides, legend_title="locality, scale", title=f"{TITLES[network]} (ddlsim packet model)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    parser.add_argument("--full", action="store_true", help="both scales, 4 localities, loads 0.1..1.0")
    parser.add_argument("--out", type=Path, default=Path("reproductions") / "opsquare_fig2_3")
    parser.add_argument("--jobs", type=int, default=1, help="worker processes (default 1)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--networks", nargs="+", choices=NETWORKS, help="subset of networks")
    parser.add_argument("--scales", type=int, nargs="+", choices=(256, 1024), help="override the node counts")
    parser.add_argument("--localities", type=float, nargs="+", help="override the localities")
    parser.add_argument("--loads", type=float, nargs="+", help="override the offered loads")
    parser.add_argument("--buffer-policy", choices=BUFFER_POLICIES, default="shared",
                        help="how a leaf-spine switch divides its buffer among ports (default: shared)")
    args = parser.parse_args(argv)
    base = FULL if args.full else QUICK
    sweep = LoadSweep(networks=tuple(args.networks or base.networks), scales=tuple(args.scales or base.scales),
                      localities=tuple(args.localities or base.localities), loads=tuple(args.loads or base.loads),
                      seed=args.seed, leafspine_buffer_policy=args.buffer_policy)

    started = time.perf_counter()

    def progress(done: int, total: int, row: dict) -> None:
        print(f"[{done}/{total}] {row['network']:9s} {row['num_nodes']:5d} nodes  locality {row['locality']:.2f}"
              f"  load {row['load']:.1f}  throughput {row['throughput']:.3f}  ({row['wall_s']:.1f} s)", flush=True)

    rows = run_sweep(sweep, jobs=args.jobs, progress=progress)
    frame = pd.DataFrame(rows)
    args.out.mkdir(parents=True, exist_ok=True)
    frame.drop(columns=["wall_s", "cpu_s"]).to_csv(args.out / "results.csv", index=False)
    claims = pd.DataFrame([claim.as_row() for claim in check_claims(frame)])
    claims.to_csv(args.out / "comparison.csv", index=False)
    figures = [path for network in sweep.networks for path in plot_network(frame, network, args.out)]

    text = str
    print()
    print(format_table(claims.to_dict("records"), {"figure": text, "claim": text, "paper": text, "measured": text,
                                                    "agrees": lambda v: {True: "yes", False: "NO"}.get(v, "n/a")}))
    cpu_s = sum(row["cpu_s"] for row in rows)
    written = [args.out / "results.csv", args.out / "comparison.csv", *figures]
    print(f"\n{len(rows)} points in {time.perf_counter() - started:.1f} s ({cpu_s:.1f} s CPU); wrote "
          + ", ".join(str(path) for path in written))
    return 0


if __name__ == "__main__":
    sys.exit(main())
