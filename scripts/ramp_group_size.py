"""RAMP-x time against group size: a 1 GB all-reduce on 2 to 65,536 ranks, per RAMP placement.

    python scripts/ramp_group_size.py [--out docs/figures] [--max-ranks 65536]

Prints a table (ms per placement and the ratio between neighbouring sizes) and draws
ramp_group_size.png. `fewest_steps` is RAMP 7.4's placement, `contention_aware` ddlsim's
(`fabric.placement`); `ideal` is fewest_steps with `fabric.switching=ideal` (no subnet contention).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

SETTINGS = {"fewest_steps": {"placement": "fewest_steps"},
            "contention_aware": {"placement": "contention_aware"},
            "ideal switching": {"placement": "fewest_steps", "switching": "ideal"}}


def group_size_times(max_ranks: int = 65536) -> tuple[list[int], dict[str, list[float]]]:
    """Ranks per group and, per placement, the 1 GB RAMP-x all-reduce time in ms."""
    from ddlsim.network.api import estimate_collective, make_fabric

    sizes = [2**k for k in range(1, max_ranks.bit_length()) if 2**k <= max_ranks]
    times: dict[str, list[float]] = {}
    for label, params in SETTINGS.items():
        fabric = make_fabric("ramp", **params)
        started = time.perf_counter()
        times[label] = [estimate_collective("all_reduce", 10**9, n, fabric, "rampx").time_s * 1e3 for n in sizes]
        print(f"{label}: {time.perf_counter() - started:.1f} s", file=sys.stderr)
    return sizes, times


def draw(sizes: list[int], times: dict[str, list[float]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(6.4, 3.6))
    for label, values in times.items():
        axes.plot(sizes, values, marker="o", label=label)
    axes.set_xscale("log", base=2)
    axes.set_xlabel("ranks in the group")
    axes.set_ylabel("1 GB RAMP-x all-reduce (ms)")
    axes.legend()
    axes.grid(True, alpha=0.3)
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("docs/figures"))
    parser.add_argument("--max-ranks", type=int, default=65536)
    args = parser.parse_args(argv)
    sizes, times = group_size_times(args.max_ranks)
    print("| ranks | " + " | ".join(f"{label} (ms)" for label in times) + " |")
    print("| --- |" + " --- |" * len(times))
    for index, n in enumerate(sizes):
        print(f"| {n:,} | " + " | ".join(f"{values[index]:.3g}" for values in times.values()) + " |")
    for label, values in times.items():
        jump = max(max(a, b) / min(a, b) for a, b in zip(values, values[1:]))
        print(f"{label}: largest ratio between neighbouring sizes {jump:.2f}x")
    draw(sizes, times, args.out / "ramp_group_size.png")
    print(f"wrote {args.out / 'ramp_group_size.png'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
