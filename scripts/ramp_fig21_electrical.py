"""RAMP Fig. 21, electrical half: all-reduce time vs number of GPUs on the SuperPod fat-tree.

    python scripts/ramp_fig21_electrical.py                    # writes outputs/ramp_fig21/
    python scripts/ramp_fig21_electrical.py --out DIR --quick  # a smaller grid

Ring, 2D-torus and hierarchical all-reduce (RAMP 7.6) on the DGX SuperPod fat-tree scaled to
65,536 GPUs with no oversubscription between intra- and inter-DGX traffic (RAMP 8.4: every GPU
at 2.4 Tbps, the `superpod_1to1` fabric), A100 reductions in half precision, at several message
sizes. Writes fig21_electrical.csv (one row per strategy, size and GPU count, with the
head-to-head / head-to-tail / compute split and the H2T/H2H ratio of Fig. 22) and
fig21_electrical.png, and prints the table and the paper's qualitative statements checked
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

# 2D-torus rings need an x dimension; RAMP does not give it. "2D-Torus" is near-square (x = y =
# 256 at 65,536 GPUs), "2D-Torus x=8" puts one DGX on each x-ring (y = GPUs / 8).
STRATEGIES = {"ring": ("Ring", "ring"), "torus2d": ("2D-Torus", "torus2d"),
              "torus2d_x8": ("2D-Torus x=8", Torus2DRing(dim_x=8)), "hierarchical": ("Hierarchical", "hierarchical")}
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


def plot(frame: pd.DataFrame, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    colours = {"Ring": "tab:red", "2D-Torus": "tab:blue", "2D-Torus x=8": "tab:purple", "Hierarchical": "tab:green"}
    markers = dict(zip(sorted(frame.size_bytes.unique()), "osD^v<>"))
    figure, (times, ratios) = plt.subplots(1, 2, figsize=(12, 4.8))
    for (label, size), group in frame.groupby(["strategy", "size_bytes"]):
        group = group.sort_values("num_gpus")
        style = {"color": colours[label], "marker": markers[size], "linestyle": "--", "markersize": 5}
        name = f"{label}, {units.format_size_bytes(size)}"
        times.plot(group.num_gpus, group.time_s, label=name, **style)
        ratios.plot(group.num_gpus, group.h2t_over_h2h, label=name, **style)
    for axis, title in ((times, "all-reduce completion time (s)"), (ratios, "H2T / H2H (RAMP Fig. 22)")):
        axis.set_xscale("log", base=2)
        axis.set_yscale("log")
        axis.set_xlabel("number of GPUs")
        axis.set_title(title)
        axis.grid(True, which="both", alpha=0.3)
    ratios.axhline(10, color="grey", linewidth=0.8)
    times.legend(fontsize=7, ncol=2)
    figure.suptitle("RAMP Fig. 21, electrical half: SuperPod fat-tree, 2.4 Tbps per GPU (1:1)")
    figure.tight_layout()
    figure.savefig(path, dpi=150)
    plt.close(figure)


def main(argv: list[str] | None = None) -> pd.DataFrame:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("outputs/ramp_fig21"))
    parser.add_argument("--quick", action="store_true", help="fewer GPU counts")
    args = parser.parse_args(argv)
    frame = compute(SIZES, QUICK_GPUS if args.quick else GPUS)
    args.out.mkdir(parents=True, exist_ok=True)
    frame.to_csv(args.out / "fig21_electrical.csv", index=False)
    plot(frame, args.out / "fig21_electrical.png")
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
    print(f"\nwrote {args.out / 'fig21_electrical.csv'} and {args.out / 'fig21_electrical.png'}")
    return frame


if __name__ == "__main__":
    main()
