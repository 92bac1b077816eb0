"""docs/reproduction.md: each seed's headline numbers under the paper's assumptions and ddlsim's own.

For every seed, `SEEDS` names an experiment, the headline quantities computed from its rows, the
paper's values, and the switches of its ``assumptions=<seed>_paper`` option as overrides that put
one switch back to ddlsim's faithful setting (the what-if rows). `seed_tables` formats the rows of
those sweeps; ``python scripts/reproduction_assumptions.py`` runs them and writes the tables.
Nothing is typed in by hand but the paper's values (quoted from the seeds' text) and the prose
around the tables.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import pandas as pd

Headline = Callable[[pd.DataFrame], dict[str, str]]


def _ok(frame: pd.DataFrame) -> pd.DataFrame:
    return frame[frame["status"] == "ok"] if "status" in frame else frame


def _point(frame: pd.DataFrame) -> pd.Series:
    """The sweep point of each row without its fabric (rows of one point on several fabrics match)."""
    return frame["overrides"].map(lambda text: " ".join(t for t in text.split() if not t.startswith("fabric=")))


def _speedups(frame: pd.DataFrame, base: str, other: str, column: str = "iteration_time_s") -> pd.Series:
    frame = _ok(frame).assign(point=_point)
    table = frame.pivot_table(index="point", columns="fabric", values=column)
    if base not in table or other not in table:
        return pd.Series(dtype=float)
    return (table[other] / table[base]).dropna()


def _range(values: pd.Series, unit: str = "x", scale: float = 1.0) -> str:
    if values.empty:
        return "-"
    low, high = values.min() * scale, values.max() * scale
    return f"{low:.3g}-{high:.3g}{unit}" if f"{low:.3g}" != f"{high:.3g}" else f"{low:.3g}{unit}"


def _shares(frame: pd.DataFrame, fabrics: Sequence[str]) -> pd.Series:
    frame = _ok(frame)
    return frame.loc[frame["fabric"].isin(fabrics), "comm_fraction"]


def ramp_training(others: dict[str, str]) -> Headline:
    def headline(frame: pd.DataFrame) -> dict[str, str]:
        result = {}
        for label, fabric in others.items():
            ratio = _speedups(frame, "ramp", fabric)
            result[f"RAMP speed-up over {label}"] = _range(ratio)
        result["RAMP communication share"] = _range(_shares(frame, ["ramp"]), " %", 100)
        result["baselines' communication share"] = _range(_shares(frame, list(others.values())), " %", 100)
        result["runs that fit (ok / all)"] = f"{len(_ok(frame))} / {len(frame)}"
        return result
    return headline


def sipac_hybrid(frame: pd.DataFrame) -> dict[str, str]:
    frame = _ok(frame)

    def jct(fabric: str, ranks: int, bandwidth_gbps: int) -> float:
        rows = frame[(frame["fabric"] == fabric) & (frame["num_ranks"] == ranks)
                     & (frame["cu_bandwidth_bps"] == bandwidth_gbps * 1e9)]
        return float(rows["time_s"].iloc[0]) if len(rows) else float("nan")

    return {
        "p=64: SiPAC JCT reduction 128 -> 4,096 Gb/s": f"{jct('sipac', 64, 128) / jct('sipac', 64, 4096):.3g}x",
        "p=64, 128 Gb/s: SuperPod JCT / SiPAC JCT": f"{jct('superpod_sipac', 64, 128) / jct('sipac', 64, 128):.3g}x",
        "p=512, 4,096 Gb/s: BCube JCT / SiPAC JCT": f"{jct('bcube', 512, 4096) / jct('sipac', 512, 4096):.3g}x",
        "p=512, 4,096 Gb/s: SuperPod JCT / SiPAC JCT":
            f"{jct('superpod_sipac', 512, 4096) / jct('sipac', 512, 4096):.3g}x",
    }


def topoopt_plain(frame: pd.DataFrame) -> dict[str, str]:
    return {"Fat-tree / TopoOpt iteration time (DLRM, B = 100 Gbps)":
            _range(_speedups(frame, "topoopt", "topoopt_fat_tree")),
            "Ideal Switch / TopoOpt iteration time": _range(_speedups(frame, "topoopt", "topoopt_ideal"))}


@dataclass(frozen=True)
class Seed:
    title: str
    experiment: Sequence[str]  # the sweep's overrides, without assumptions
    assumptions: str
    headline: Headline
    paper: dict[str, str]
    what_ifs: dict[str, Sequence[str]] = field(default_factory=dict)  # label -> overrides back to faithful
    faithful_plus: dict[str, Sequence[str]] = field(default_factory=dict)  # label -> overrides on faithful
    note: str = ""


_PAPER_SET = "rampx,rampx_ring,ring,hierarchical,torus2d,topoopt_ring"  # as in configs/assumptions/ramp_paper.yaml
_RAMP16_OTHERS = {"Fat-Tree": "superpod", "TopoOpt": "topoopt_ramp_per_step"}
SEEDS: tuple[Seed, ...] = (
    Seed("RAMP Fig. 16: Megatron, ten target losses",
         ["experiment=ramp_fig16", "model.widen_heads=true", "fabric=ramp,superpod,topoopt_ramp_per_step"],
         "ramp_paper", ramp_training(_RAMP16_OTHERS),
         {"RAMP speed-up over Fat-Tree": "1.01-16.7x (both baselines)", "RAMP speed-up over TopoOpt": "",
          "RAMP communication share": "0.6-11 %", "baselines' communication share": "23.8-94.6 %"},
         {"TP all-reduces: Megatron's 6 per layer": ["assumptions.model.megatron.tp_all_reduces=megatron"],
          "shape, batch, steps from ddlsim's scaling laws and memory model":
              ["assumptions.model.megatron.shape_source=scaling_laws",
               "assumptions.parallel.megatron.activation_offload=false"],
          "no activation offload (Table 9 shapes kept)": ["assumptions.parallel.megatron.activation_offload=false"],
          "RAMP switching: transcoder contention": ["assumptions.fabric.ramp.switching=transcoder"],
          "strategies: best without direct (Bruck, RHD, trees too)": ["assumptions.collective.best.include=[]"]},
         {"with only the paper's strategy set (RAMP 7.6)": [f"collective.include=[{_PAPER_SET}]"]}),
    Seed("RAMP Fig. 17: DLRM, 256 to 65,536 GPUs",
         ["experiment=ramp_fig17"], "ramp_paper", ramp_training({"Fat-Tree": "superpod",
                                                                  "TopoOpt": "topoopt_ramp_per_step"}),
         {"RAMP speed-up over Fat-Tree": "up to 58x", "RAMP speed-up over TopoOpt": "up to 7.8x",
          "RAMP communication share": "< 1 %", "baselines' communication share": "12.5-98 %"},
         {"RAMP switching: transcoder contention": ["assumptions.fabric.ramp.switching=transcoder"],
          "strategies: best without direct (Bruck, RHD, trees too)": ["assumptions.collective.best.include=[]"]},
         {"with only the paper's strategy set (RAMP 7.6)": [f"collective.include=[{_PAPER_SET}]"]}),
    Seed("SiPAC Fig. 13: hybrid MP all-to-all + DP all-reduce",
         ["experiment=sipac_fig13"], "sipac_paper", sipac_hybrid,
         {"p=64: SiPAC JCT reduction 128 -> 4,096 Gb/s": "keeps decreasing",
          "p=64, 128 Gb/s: SuperPod JCT / SiPAC JCT": "similar (about 1x)",
          "p=512, 4,096 Gb/s: BCube JCT / SiPAC JCT": "> 1 (SiPAC soon best)",
          "p=512, 4,096 Gb/s: SuperPod JCT / SiPAC JCT": "> 1"},
         {"switch pair bandwidth B / r": ["assumptions.fabric.sipac.pair_share=r"],
          "strategies: best per system": [f"assumptions.collective_for_fabric.{name}=null" for name in
                                          ("sipac", "bcube", "superpod_sipac", "torus2d_sipac")]}),
    Seed("TopoOpt (plain runs; Fig. 11's experiment is made elsewhere)",
         ["experiment=single", "model=topoopt_dlrm", "fabric=topoopt,topoopt_fat_tree,topoopt_ideal"],
         "topoopt_paper", topoopt_plain,
         {"Fat-tree / TopoOpt iteration time (DLRM, B = 100 Gbps)": "2.1-3.0x (Fig. 11, all models and B)",
          "Ideal Switch / TopoOpt iteration time": "about 1/1.3 (DLRM)"},
         {"AllReduce: best instead of ring": [f"assumptions.collective_for_fabric.{name}=null" for name in
                                              ("topoopt", "topoopt_fat_tree", "topoopt_ideal")],
          "ring-AllReduce read as ddlsim's flat ring on the switched baselines": [
              f"assumptions.collective_for_fabric.{name}.ops.all_reduce=ring" for name in
              ("topoopt_fat_tree", "topoopt_ideal")]}),
)


def seed_tables(seed: Seed, run: Callable[[Sequence[str]], pd.DataFrame]) -> list[str]:
    """The markdown lines of one seed: three-column table, then the one-at-a-time what-ifs.
    `run(overrides)` gives a sweep's rows (``python scripts/reproduction_assumptions.py`` passes
    `ddlsim.app.sweep.inprocess.run_sweep`)."""
    paper_rows = seed.headline(run([*seed.experiment, f"assumptions={seed.assumptions}"]))
    faithful = seed.headline(run(seed.experiment))
    lines = [f"## {seed.title}", "", f"`{' '.join(seed.experiment)}`, with and without "
             f"`assumptions={seed.assumptions}`:", "",
             f"| quantity | paper | ddlsim, {seed.assumptions} | ddlsim, faithful |", "| --- | --- | --- | --- |"]
    lines += [f"| {name} | {seed.paper.get(name, '')} | {value} | {faithful.get(name, '-')} |"
              for name, value in paper_rows.items()]
    if seed.what_ifs:
        names = list(paper_rows)
        lines += ["", f"What-if: one assumption of `{seed.assumptions}` at a time put back to ddlsim's setting:", "",
                  "| setting | " + " | ".join(names) + " |", "| --- |" + " --- |" * len(names),
                  f"| all of {seed.assumptions} | " + " | ".join(paper_rows[name] for name in names) + " |"]
        for label, overrides in seed.what_ifs.items():
            moved = seed.headline(run([*seed.experiment, f"assumptions={seed.assumptions}", *overrides]))
            shown = " ".join(overrides) if len(overrides) <= 2 else f"{overrides[0]} and {len(overrides) - 1} more"
            lines.append(f"| {label} (`{shown}`) | "
                         + " | ".join(moved.get(name, "-") for name in names) + " |")
        lines.append("| none (faithful) | " + " | ".join(faithful.get(name, "-") for name in names) + " |")
        for label, overrides in seed.faithful_plus.items():
            moved = seed.headline(run([*seed.experiment, *overrides]))
            lines.append(f"| faithful, {label} | " + " | ".join(moved.get(name, "-") for name in names) + " |")
    if seed.note:
        lines += ["", seed.note]
    return [*lines, ""]
