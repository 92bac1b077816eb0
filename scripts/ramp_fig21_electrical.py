"""RAMP Fig. 21, electrical half: all-reduce time vs number of GPUs on the SuperPod fat-tree.

    python scripts/ramp_fig21_electrical.py                    # writes outputs/ramp_fig21/
    python scripts/ramp_fig21_electrical.py --out DIR --quick  # a smaller grid

Ring, 2D-torus and hierarchical all-reduce (RAMP 7.6) on the DGX SuperPod fat-tree scaled to
65,536 GPUs with no oversubscription between intra- and inter-DGX traffic (RAMP 8.4: every GPU
at 2.4 Tbps, the `superpod_1to1` fabric), A100 reductions in half precision, at several message
sizes. Writes fig21_electrical.csv (one row per strategy, size and GPU count, with the
head-to-head / head-to-tail / compute split and the H2T/H2H ratio of Fig. 22) and
fig21_electrical (PNG and PDF), and prints the table and the paper's qualitative statements checked
against it. RAMP's own curve belongs to the RAMP fabric (not part of this script).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import pandas as pd  # noqa: E402

from ddlsim import units  # noqa: E402
from ddlsim.network import CollectiveEstimator, make_fabric  # noqa: E402
from ddlsim.network.collectives.ring import Torus2DRing  # noqa: E402
from ddlsim.report.charts import Guide, Panel, Quantity, line_chart  # noqa: E402
from ddlsim.report.style import size_tick  # noqa: E402

# 2D-torus rings need an x dimension; RAMP does not give it. "2D-torus rings" are near-square
# (x = y = 256 at 65,536 GPUs), "2D-torus rings x=8" put one DGX on each x-ring (y = GPUs / 8).
STRATEGIES = {"ring": ("Ring", "ring"), "torus2d": ("2D-torus rings", "torus2d"),
              "torus2d_x8": ("2D-torus rings x=8", Torus2DRing(dim_x=8)),
              "hierarchical": ("Hierarchical", "hierarchical")}
SIZES = ["1MB", "100MB", "1GB", "10GB"]
GPUS = [16, 64, 256, 1024, 4096, 16384, 65536]
QUICK_GPUS = [16, 256, 4096]


def compute(sizes: list[str], gpus: list[int]) -> pd.DataFrame:
    fabric = make_fabric("superpod_1to1")
    rows = []
    for name, (label, algorithm) in STRATEGIES.items():
        estimator = CollectiveEstimator(fabric, algorithm, "a100_80gb")
        for size in sizes:
            size_bytes = units.parse_size_bytes(size)
            for count in gpus:
                result = estimator.estimate("all_reduce", size_bytes, num_ranks=count)
                rows.append({"strategy": label, "algorithm": name, "size_bytes": size_bytes, "num_gpus": count,
                             "time_s": result.time_s, "latency_s": result.latency_s, "transfer_s": result.transfer_s,
                             "compute_s": result.compute_s, "num_steps": result.num_steps,
                             "h2t_over_h2h": result.transfer_s / result.latency_s})
    return pd.DataFrame(rows)


def claims(frame: pd.DataFrame) -> list[tuple[str, bool, str]]:
    """RAMP 8.4's statements about the electrical curves, checked on our numbers."""
    top = frame[frame.num_gpus == frame.num_gpus.max()]
    largest = frame.size_bytes.max()

    def at(strategy: str, size: int):
        return top[(top.algorithm == strategy) & (top.size_bytes == size)].iloc[0]

    checks = []
    ring_grows = all(
        (group.sort_values("num_gpus").time_s.diff().dropna() > 0).all()
        for _, group in frame[frame.algorithm == "ring"].groupby("size_bytes"))
    checks.append(("ring time rises with the number of GPUs at every size", ring_grows, ""))
    ordering = all(at("ring", size).time_s > at("torus2d", size).time_s > at("hierarchical", size).time_s
                   for size in top.size_bytes.unique())
    checks.append(("at full scale: ring slower than 2D-torus, 2D-torus slower than hierarchical", ordering, ""))
    transfer_bound = sorted(f"{label} {units.format_size_bytes(size)}" for name, (label, _) in STRATEGIES.items()
                            for size in top.size_bytes.unique() if at(name, size).h2t_over_h2h > 10)
    checks.append(("at full scale only hierarchical at the largest size has negligible H2H (H2T/H2H > 10)",
                   transfer_bound == [f"Hierarchical {units.format_size_bytes(largest)}"],
                   "H2T/H2H > 10 for: " + (", ".join(transfer_bound) or "none")))
    hierarchical_big = at("hierarchical", largest)
    checks.append((f"hierarchical at {units.format_size_bytes(largest)}: H2H negligible (H2T/H2H > 10)",
                   hierarchical_big.h2t_over_h2h > 10, f"H2T/H2H = {hierarchical_big.h2t_over_h2h:.0f}"))
    share = (hierarchical_big.transfer_s + hierarchical_big.compute_s) / hierarchical_big.time_s
    checks.append((f"hierarchical at {units.format_size_bytes(largest)}: dominated by H2T and compute (Fig. 20)",
                   share > 0.9, f"{share:.1%} of the time"))
    return checks


def plot(frame: pd.DataFrame, path: Path) -> list[Path]:
    """All-reduce time and H2T/H2H against the GPU count, one colour per strategy, one line style per size."""
    frame = frame.assign(size=frame.size_bytes.map(size_tick))
    gpus = Quantity("num_gpus", "number of GPUs", "count")
    chart = [Panel(frame, "all-reduce completion time", y=Quantity("time_s", "completion time", "time_s")),
             Panel(frame, "H2T / H2H (RAMP Fig. 22)", y=Quantity("h2t_over_h2h", "H2T / H2H"))]
    return line_chart(chart, gpus, chart[0].y, "strategy", path.parent, path.stem, variant="size", columns=2,
                      legend_title="strategy, message size", guides=[Guide(10.0, "H2T = 10 x H2H", panel=1)],
                      title="RAMP Fig. 21, electrical half: SuperPod fat-tree, 2.4 Tbps per GPU (1:1)")


def main(argv: list[str] | None = None) -> pd.DataFrame:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("outputs/ramp_fig21"))
    parser.add_argument("--quick", action="store_true", help="fewer GPU counts")
    args = parser.parse_args(argv)
    frame = compute(SIZES, QUICK_GPUS if args.quick else GPUS)
    args.out.mkdir(parents=True, exist_ok=True)
    frame.to_csv(args.out / "fig21_electrical.csv", index=False)
    written = plot(frame, args.out / "fig21_electrical.png")
    table = frame.assign(size=frame.size_bytes.map(units.format_size_bytes)).pivot_table(
        index=["size", "num_gpus"], columns="strategy", values="time_s", sort=False)
    with pd.option_context("display.float_format", "{:.4g}".format, "display.width", 120):
        print("all-reduce time (s) on the SuperPod fat-tree at 2.4 Tbps per GPU:")
        print(table.to_string())
    print("\nRAMP 8.4 statements about these curves (the paper prints no electrical values):")
    for text, holds, detail in claims(frame):
        print(f"  [{'holds' if holds else 'DIFFERS'}] {text}" + (f" ({detail})" if detail else ""))
    print("\nRAMP 8.4.1 gives RAMP's speed-up over ring (9 to 10,000x) and over hierarchical (1.16 to 10x) at full")
    print("scale. Reading the ends of both ranges as the largest and the smallest message, the paper implies")
    print("ring / hierarchical time ratios that our electrical curves can be put beside (RAMP itself cancels out):")
    top = frame[frame.num_gpus == frame.num_gpus.max()]
    for size, paper in ((frame.size_bytes.min(), 10000 / 10), (frame.size_bytes.max(), 9 / 1.16)):
        ring = top[(top.algorithm == "ring") & (top.size_bytes == size)].time_s.iloc[0]
        hierarchical = top[(top.algorithm == "hierarchical") & (top.size_bytes == size)].time_s.iloc[0]
        print(f"  {units.format_size_bytes(size):>5s} at {frame.num_gpus.max()} GPUs: paper {paper:8.1f}   "
              f"ddlsim {ring / hierarchical:8.1f}")
    print(f"\nwrote {args.out / 'fig21_electrical.csv'}", *written)
    return frame


if __name__ == "__main__":
    main()
