#!/usr/bin/env python
"""Reproduce WRHT Figs. 4, 5 and 6: all-reduce time on the WDM optical ring, by algorithm.

- Fig. 4: WRHT on 1,024 nodes with group sizes 17, 33, 65, 129 (w = 64), normalised to m = 129.
- Fig. 5: 1,024 nodes, 4 to 256 wavelengths; Ring, H-Ring (m = 5), BT and WRHT (m = 2w + 1).
- Fig. 6: 64 wavelengths, 1,024 to 4,096 nodes.

Messages are the fp32 gradients of ResNet-50, VGG-16, AlexNet and BEiT-L, with parameter counts
computed from the architectures (`ddlsim.workload.vision`). As in the paper, the optical budget
is not applied (Section 5.4: "assume there is no constraint of optical communication") and local
reductions are not timed (Eq. 6 has no compute term). The paper gives its figures only as
normalised bars, so the side-by-side comparison uses the averages its text states. Writes under
--out (default ./reproductions/wrht_fig5_6/): results.csv, comparison.csv, fig4, fig5 and
fig6 (PNG and PDF). The extra series "Ring, fixed circuits" is the ring on the same fabric with
reconfigure=on_change (its circuits never change, so it pays 25 us once, not per step).

    python scripts/wrht_fig5_6.py
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

from ddlsim.catalog import load_all
from ddlsim.network import CollectiveEstimator, make_fabric
from ddlsim.network.collectives.wrht import lemma1_group_size
from ddlsim.report.charts import Panel, Quantity, bar_chart, line_chart, panels_by
from ddlsim.report.table import format_table
from ddlsim.workload.vision import gradient_bytes

MODELS = {"resnet50": "ResNet50", "vgg16": "VGG16", "alexnet": "AlexNet", "beit_large": "BEiT-L"}
BASELINES = {"ring": "Ring", "hring": "H-Ring", "binomial_tree": "BT"}
# Average reductions of WRHT's communication time that the paper's text states.
PAPER_CLAIMS = {("fig5", "ring"): 13.74, ("fig5", "hring"): 9.29, ("fig5", "binomial_tree"): 75.0,
                ("fig6", "ring"): 65.23, ("fig6", "hring"): 43.81, ("fig6", "binomial_tree"): 82.22}


def estimate(num_nodes: int, wavelengths: int, algorithm: dict, size_bytes: int, **fabric) -> dict:
    ring = make_fabric("optical_ring", num_nodes=num_nodes, wavelengths=wavelengths, optical_constraints=False,
                       **fabric)
    result = CollectiveEstimator(ring, algorithm, device=None).estimate("all_reduce", size_bytes,
                                                                        num_ranks=num_nodes)
    return {"num_steps": result.num_steps, "time_s": result.time_s, "latency_s": result.latency_s,
            "transfer_s": result.transfer_s}


def algorithms(wavelengths: int, num_nodes: int) -> dict[str, dict]:
    return {"ring": {"name": "ring"}, "hring": {"name": "hring", "m": 5}, "binomial_tree": {"name": "binomial_tree"},
            "wrht": {"name": "wrht", "m": min(lemma1_group_size(wavelengths), num_nodes)}}


def run(sizes: dict[str, int]) -> pd.DataFrame:
    rows = []
    for model, size in sizes.items():
        for m in (17, 33, 65, 129):
            rows.append({"figure": "fig4", "model": model, "num_nodes": 1024, "wavelengths": 64, "algorithm": "wrht",
                         "m": m, **estimate(1024, 64, {"name": "wrht", "m": m}, size)})
        for figure, points in (("fig5", [(1024, w) for w in (4, 16, 64, 256)]),
                               ("fig6", [(n, 64) for n in (1024, 2048, 3072, 4096)])):
            for num_nodes, wavelengths in points:
                for name, algorithm in algorithms(wavelengths, num_nodes).items():
                    rows.append({"figure": figure, "model": model, "num_nodes": num_nodes, "wavelengths": wavelengths,
                                 "algorithm": name, "m": algorithm.get("m", 0),
                                 **estimate(num_nodes, wavelengths, algorithm, size)})
                rows.append({"figure": figure, "model": model, "num_nodes": num_nodes, "wavelengths": wavelengths,
                             "algorithm": "ring_fixed_circuits", "m": 0,
                             **estimate(num_nodes, wavelengths, {"name": "ring"}, size, reconfigure="on_change")})
    frame = pd.DataFrame(rows)
    frame["size_bytes"] = frame.model.map(sizes)
    return frame


def normalise(frame: pd.DataFrame) -> pd.DataFrame:
    """Each figure's times divided by the paper's reference bar."""
    reference = {"fig4": None,
                 "fig5": frame.query("figure == 'fig5' and model == 'resnet50' and algorithm == 'wrht' and "
                                     "wavelengths == 256").time_s.iloc[0],
                 "fig6": frame.query("figure == 'fig6' and model == 'resnet50' and algorithm == 'wrht' and "
                                     "num_nodes == 1024").time_s.iloc[0]}
    normalised = []
    for row in frame.itertuples():
        base = reference[row.figure]
        if base is None:
            base = frame.query(f"figure == 'fig4' and model == '{row.model}' and m == 129").time_s.iloc[0]
        normalised.append(row.time_s / base)
    return frame.assign(normalised_time=normalised)


def comparison(frame: pd.DataFrame) -> list[dict]:
    rows = []
    for (figure, baseline), paper in PAPER_CLAIMS.items():
        part = frame[frame.figure == figure]
        keys = ["model", "num_nodes", "wavelengths"]
        merged = part[part.algorithm == "wrht"].merge(part[part.algorithm == baseline], on=keys, suffixes=("", "_b"))
        reduction = (1 - merged.time_s / merged.time_s_b) * 100
        rows.append({"figure": figure, "claim": f"WRHT vs {BASELINES[baseline]}: mean time reduction",
                     "paper_percent": paper, "ours_percent": round(float(reduction.mean()), 2),
                     "ours_min_percent": round(float(reduction.min()), 2),
                     "ours_max_percent": round(float(reduction.max()), 2)})
    fig4 = frame[frame.figure == "fig4"].pivot_table(index="model", columns="m", values="time_s")
    ratio = pd.concat([fig4[65] / fig4[17], fig4[129] / fig4[17]]) * 100
    rows.append({"figure": "fig4", "claim": "WRHT_2 (m=65), WRHT_3 (m=129) time as % of WRHT_0 (m=17): 'half'",
                 "paper_percent": 50.0, "ours_percent": round(float(ratio.mean()), 2),
                 "ours_min_percent": round(float(ratio.min()), 2), "ours_max_percent": round(float(ratio.max()), 2)})
    return rows


def plot(frame: pd.DataFrame, figure_name: str, x: str, out: Path) -> list[Path]:
    labels = {**BASELINES, "wrht": "WRHT", "ring_fixed_circuits": "Ring, fixed circuits"}
    part = frame[(frame.figure == figure_name) & frame.algorithm.isin(labels)]
    part = part.assign(series=part.algorithm.map(labels), order=part.algorithm.map(list(labels).index))
    part = part.sort_values(["order", x])
    x_quantity = Quantity(x, "wavelengths" if x == "wavelengths" else "nodes", "count")
    reference = "256 wavelengths" if figure_name == "fig5" else "1,024 nodes"
    return line_chart(panels_by(part, "model", MODELS.get), x_quantity, Quantity("normalised_time", "time / reference"),
                      "series", out, figure_name, columns=2, legend_title="algorithm",
                      title=f"WRHT Fig. {figure_name[-1]} reproduced (ddlsim, optical ring); "
                            f"reference: WRHT on ResNet50 at {reference}")


def plot_fig4(frame: pd.DataFrame, out: Path) -> list[Path]:
    part = frame[frame.figure == "fig4"].sort_values("m", kind="stable")
    index = {m: position for position, m in enumerate(sorted(part.m.unique()))}
    part = part.assign(series=[f"WRHT_{index[m]} (m={m})" for m in part.m])
    return bar_chart([Panel(part)], "model", Quantity("normalised_time", "time / WRHT_3"), "series", out, "fig4",
                     category_label="model", legend_title="group size", category_name=MODELS.get,
                     title="WRHT Fig. 4 reproduced: 1024 nodes, w = 64")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    parser.add_argument("--out", type=Path, default=Path("reproductions") / "wrht_fig5_6")
    args = parser.parse_args(argv)
    load_all()
    sizes = {model: gradient_bytes(model) for model in MODELS}
    print(format_table([{"model": MODELS[m], "gradient_bytes": s, "params": s // 4} for m, s in sizes.items()],
                       {"model": str, "params": str, "gradient_bytes": str}))
    frame = normalise(run(sizes))
    args.out.mkdir(parents=True, exist_ok=True)
    frame.to_csv(args.out / "results.csv", index=False)
    claims = comparison(frame)
    pd.DataFrame(claims).to_csv(args.out / "comparison.csv", index=False)
    resnet = frame[frame.model == "resnet50"]
    fig4_steps = resnet[resnet.figure == "fig4"].set_index("m").num_steps
    print("\nFig. 4 WRHT steps by m: " + ", ".join(f"m={m}: {s}" for m, s in fig4_steps.items()))
    steps = resnet[resnet.figure != "fig4"].pivot_table(index=["figure", "num_nodes", "wavelengths"],
                                                        columns="algorithm", values="num_steps", aggfunc="first")
    print("\nSteps per all-reduce (any model):\n" + steps.to_string())
    time_ms = frame[frame.figure != "fig4"].pivot_table(index=["figure", "model", "num_nodes", "wavelengths"],
                                                        columns="algorithm", values="time_s") * 1e3
    print("\nAll-reduce time (ms):\n" + time_ms.round(2).to_string())
    print("\nPaper vs ddlsim:\n" + format_table(claims, {key: str for key in claims[0]}))
    paths = [*plot_fig4(frame, args.out), *plot(frame, "fig5", "wavelengths", args.out),
             *plot(frame, "fig6", "num_nodes", args.out)]
    print("\nwrote", args.out / "results.csv", args.out / "comparison.csv", *paths)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
