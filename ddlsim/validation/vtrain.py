"""Score ddlsim against 1,549 measured Megatron-DeepSpeed GPT iteration times on A100 GPUs.

    python scripts/validate_vtrain.py [DATA_DIR] [--out DIR] [--no-plot]

DATA_DIR holds vTrain's ``ground_truth_single.csv`` (1,440 runs inside one 8-GPU node) and
``ground_truth_multi.csv`` (109 runs on 64 to 512 GPUs); it defaults to
``../shared/validation/vtrain`` beside the repository. Every row is simulated with `model=gpt`
(1F1B pipeline schedule, full activation checkpointing, no gradient bucketing), the cluster of
``configs/fabric/vtrain_a100.yaml`` (hierarchical rings, as NCCL's rings cross each node once)
and the A100 kernel roofline of ``configs/compute/a100_megatron.yaml``, whose constants
`scripts/fit_vtrain.py` fitted on the single-node file only (`fitting_mask`): every multi-node
row is held out. (`half_groups_mask` is the seeded split that fit_vtrain.py's cross-validation
uses to estimate the single-node error on runs the fit never saw.)

``--schedule NAME`` forces a pipeline schedule (``interleaved_1f1b`` with one virtual stage must
reproduce ``1f1b`` exactly); ``--virtual-stages V`` simulates every pipelined row whose layers
split into pipeline x V chunks and whose micro-batches are a multiple of the pipeline with the
interleaved 1F1B schedule (the others as measured, with 1F1B); ``--overlap-p2p-comm`` sets
``training.overlap_p2p_comm`` (Megatron-Core's option, off by default) for those rows. The
measured runs used non-interleaved 1F1B, so those rows score the interleaved schedule against
1F1B measurements: the report says how many rows it applies to and how their predictions move.

Writes ``DIR/vtrain_predictions.csv`` (one row per measured run: inputs, measured and predicted
milliseconds, error, whether the row was used for fitting) and ``DIR/vtrain_predicted_vs_measured``
(PNG and PDF), and prints the mean absolute percentage error (MAPE), median and maximum absolute error by
scale and split, and by parallelism.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from omegaconf import OmegaConf

REPO = Path(__file__).resolve().parents[2]
DEFAULT_DATA = REPO.parent / "shared" / "validation" / "vtrain"
COMPUTE_CONFIG = REPO / "configs" / "compute" / "a100_megatron.yaml"
FABRIC = "vtrain_a100"
ALGORITHM = "hierarchical"
DEVICE = "a100_80gb"
SPLIT_SEED = 9
FILES = {"single-node": "ground_truth_single.csv", "multi-node": "ground_truth_multi.csv"}
COLUMNS = {
    "Parameters (billion)": "params_billion", "# GPUs": "gpus", "global batch": "global_batch",
    "micro batch": "micro_batch", "hidden size": "d_model", "attention heads": "heads", "# layers": "layers",
    "sequence length": "seq_len", "tensor parallelism": "tp", "data parallelism": "dp",
    "pipeline parallelism": "pp", "iteration time (ms)": "measured_ms",
}
# Single-node rows are exactly linear in layers and micro-batches: the runs of one hidden size,
# tensor-parallel degree and micro-batch share one measured per-layer cost. They are split by
# that group, so that no held-out row shares a measurement with a fitting row.
SPLIT_GROUP = ("d_model", "tp", "micro_batch")


def load_rows(data_dir: Path) -> pd.DataFrame:
    """Both files as one table with snake_case columns, `scale` and `parallelism` added."""
    frames = []
    for scale, name in FILES.items():
        path = data_dir / name
        frame = pd.read_csv(path, encoding="utf-8-sig")
        frame = frame.rename(columns=lambda column: COLUMNS.get(column.strip(), column))
        missing = sorted(set(COLUMNS.values()) - {"params_billion"} - set(frame.columns))
        if missing:
            raise ValueError(f"{path}: missing columns {missing}")
        frame.insert(0, "scale", scale)
        frame.insert(1, "source_row", np.arange(len(frame)))
        frames.append(frame)
    rows = pd.concat(frames, ignore_index=True)
    rows["parallelism"] = [parallelism_label(*degrees) for degrees in zip(rows.tp, rows.dp, rows.pp, strict=True)]
    return rows


def parallelism_label(tp: int, dp: int, pp: int) -> str:
    parts = [name for name, degree in (("TP", tp), ("DP", dp), ("PP", pp)) if degree > 1]
    return "+".join(parts) or "none"


def fitting_mask(rows: pd.DataFrame) -> pd.Series:
    """The rows the shipped constants were fitted on: the single-node file."""
    return rows.scale == "single-node"


def half_groups_mask(rows: pd.DataFrame, seed: int = SPLIT_SEED) -> pd.Series:
    """True for the single-node rows of a seeded half of the `SPLIT_GROUP` groups (cross-validation)."""
    single = rows.scale == "single-node"
    groups = sorted({tuple(int(v) for v in key) for key in rows.loc[single, list(SPLIT_GROUP)].itertuples(index=False)})
    order = np.random.default_rng(seed).permutation(len(groups))
    chosen = {groups[i] for i in order[: len(groups) // 2]}
    keys = [tuple(int(v) for v in key) for key in rows[list(SPLIT_GROUP)].itertuples(index=False)]
    return pd.Series([bool(s) and key in chosen for s, key in zip(single, keys, strict=True)], index=rows.index)


@dataclass
class Setup:
    """Everything one simulation needs besides the row: device, compute model, collective timer,
    and the caches the rows share (kernel lists of a shard shape; prices of calls and tasks)."""

    device: Any
    compute: Any
    collective_timer: Any
    settings: Any
    kernel_bytes: Any = None
    pricer: Any = None


def compute_config(overrides: dict[str, Any] | None = None) -> Any:
    """The `compute=a100_megatron` group (its YAML over the schema defaults), plus `overrides`."""
    from ddlsim.compute.model import ComputeConfig

    node = OmegaConf.load(COMPUTE_CONFIG)
    node.pop("defaults", None)
    merged = OmegaConf.merge(OmegaConf.structured(ComputeConfig), node, OmegaConf.create(overrides or {}))
    return OmegaConf.to_object(merged)


def build_setup(compute_overrides: dict[str, Any] | None = None,
                fabric_overrides: dict[str, Any] | None = None, schedule: str = "auto",
                overlap_p2p_comm: bool = False, at_scale: Any = None) -> Setup:
    """Device, compute model and collective timer of the vTrain runs; `at_scale`, an
    `AtScaleSettings`, switches at-scale costs on (off: today's numbers)."""
    from ddlsim.compute.devices import DeviceConfig, DeviceSpec
    from ddlsim.compute.model import ComputeModel
    from ddlsim.network.api import make_fabric
    from ddlsim.training import TrainingSettings
    from ddlsim.training.run import network_timer, reduction_model

    device = DeviceSpec.from_config(DeviceConfig(name=DEVICE))
    compute = ComputeModel.from_config(compute_config(compute_overrides), device)
    fabric = make_fabric(FABRIC, **(fabric_overrides or {}))
    from ddlsim.training import Pricer
    from ddlsim.training.run import compute_timer
    from ddlsim.workload.transformer.blocks import KernelBytes

    timer = network_timer(fabric, ALGORITHM, reduction_model(device))
    settings = TrainingSettings(schedule=schedule, overlap_p2p_comm=overlap_p2p_comm)
    if at_scale is not None:
        settings = dataclasses.replace(settings, at_scale=at_scale)
    return Setup(device, compute, timer, settings, KernelBytes(), Pricer(timer, compute_timer(compute)))


def interleavable(row: Any, virtual_stages: int) -> bool:
    """True when the row's layers split into pipeline x `virtual_stages` chunks and its
    micro-batches per replica are a multiple of the pipeline (Megatron's interleaving rules)."""
    micro_batches = int(row.global_batch) // (int(row.dp) * int(row.micro_batch))
    return (virtual_stages > 1 and int(row.pp) > 1 and int(row.layers) % (int(row.pp) * virtual_stages) == 0
            and micro_batches % int(row.pp) == 0)


def simulate_row(row: Any, setup: Setup, virtual_stages: int = 1) -> Any:
    """The `TrainingResult` of one measured run (with `virtual_stages` where `interleavable` and the
    interleaved plan fits the device; else as measured, with 1F1B)."""
    from ddlsim.core.errors import InfeasibleError

    if virtual_stages > 1 and interleavable(row, virtual_stages):
        try:
            return _simulate_row(row, setup, virtual_stages)
        except InfeasibleError:  # interleaving keeps more micro-batches in flight than the measured plan
            pass
    return _simulate_row(row, setup, 1)


def _simulate_row(row: Any, setup: Setup, virtual_stages: int) -> Any:
    from dataclasses import replace

    from ddlsim.training import simulate_training
    from ddlsim.workload.models.gpt import GptConfig, GptModel
    from ddlsim.workload.parallel import ParallelConfig

    model = GptModel.from_config(GptConfig(d_model=int(row.d_model), heads=int(row.heads), layers=int(row.layers),
                                           seq_len=int(row.seq_len), global_batch=int(row.global_batch)))
    model = replace(model, kernel_bytes=setup.kernel_bytes)
    parallel = ParallelConfig(tensor=int(row.tp), data=int(row.dp), pipeline=int(row.pp),
                              micro_batch=int(row.micro_batch), max_gpus=int(row.gpus),
                              virtual_stages=virtual_stages)
    workload = model.build_workload(parallel, setup.device.memory_bytes)
    return simulate_training(workload, setup.pricer, setup.settings, device=setup.device)


def simulate_rows(rows: pd.DataFrame, setup: Setup, virtual_stages: int = 1) -> pd.DataFrame:
    """`rows` with predicted_ms, compute_ms, exposed_comm_ms and error_pct (signed) added."""
    predicted, compute, exposed, chunks, straggler = [], [], [], [], []
    for row in rows.itertuples(index=False):
        result = simulate_row(row, setup, virtual_stages)
        iteration = result.iteration
        chunks.append(int(result.workload.plan.get("virtual_stages", 1)))
        predicted.append(1e3 * iteration.iteration_time_s)
        compute.append(1e3 * iteration.compute_time_s)
        exposed.append(1e3 * iteration.exposed_comm_time_s)
        straggler.append(1e3 * result.at_scale.straggler_s)
    out = rows.copy()
    out["predicted_ms"], out["compute_ms"], out["exposed_comm_ms"] = predicted, compute, exposed
    out["straggler_ms"] = straggler
    out["error_pct"] = 100.0 * (out.predicted_ms - out.measured_ms) / out.measured_ms
    if virtual_stages > 1:
        out["virtual_stages"] = chunks
    return out


def error_table(results: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    grouped = results.assign(abs_error=results.error_pct.abs()).groupby(by, sort=True)
    table = grouped.agg(rows=("abs_error", "size"), mape_pct=("abs_error", "mean"),
                        median_pct=("abs_error", "median"), max_pct=("abs_error", "max"),
                        bias_pct=("error_pct", "mean"))
    return table.round(2)


def split_label(results: pd.DataFrame) -> pd.Series:
    return np.where(results.fitted, "fitting", "held-out")


def report(results: pd.DataFrame) -> str:
    results = results.assign(split=split_label(results))
    parts = ["By scale and split (fitting: the single-node rows the constants were fitted on; held-out: the rest):",
             error_table(results, ["scale", "split"]).to_string(),
             "", "By scale, split and parallelism:",
             error_table(results, ["scale", "split", "parallelism"]).to_string(),
             "", "Multi-node rows by model size:",
             error_table(results[results.scale == "multi-node"], ["params_billion"]).to_string()]
    return "\n".join(parts)


def plot(results: pd.DataFrame, path: Path) -> list[Path]:
    """Predicted against measured iteration time, one panel per file, the identity and +-10 % dotted."""
    from ddlsim.report.charts import Guide, Panel, Quantity, line_chart

    names = {("single-node", True): "single node, used for fitting", ("single-node", False): "single node, held out",
             ("multi-node", False): "multi node, held out"}
    frame = results.assign(measured_s=results.measured_ms / 1e3, predicted_s=results.predicted_ms / 1e3)
    frame["group"] = [names[(scale, bool(fitted))] for scale, fitted in zip(frame.scale, frame.fitted, strict=True)]
    counts = frame.groupby("group").agg(rows=("group", "size"), mape=("error_pct", lambda error: error.abs().mean()))
    frame["group"] = frame.group.map(lambda group: f"{group} ({counts.rows[group]} rows, "
                                                   f"MAPE {counts.mape[group]:.1f} %)")
    chart = [Panel(frame[frame.scale == scale], f"{scale} A100 runs") for scale in FILES]
    guides = [Guide(1.0, kind="ratio"), Guide(0.9, kind="ratio"), Guide(1.1, kind="ratio")]
    return line_chart(chart, Quantity("measured_s", "measured iteration time (s)", scale="log"),
                      Quantity("predicted_s", "ddlsim iteration time (s)", scale="log"), "group", path.parent,
                      path.stem, points=True, guides=guides, columns=2, legend_title="rows",
                      title="ddlsim against measured A100 iteration times (dotted: identity and +-10 %)")


def interleaving_report(interleaved: pd.DataFrame, one_f_one_b: pd.DataFrame) -> str:
    """How the interleaved rows' predictions compare with 1F1B's and with the (1F1B) measurements."""
    if interleaved.empty:
        return "No row can be interleaved with these virtual stages."
    table = pd.DataFrame({"scale": interleaved.scale, "error_1f1b_pct": one_f_one_b.error_pct,
                          "error_interleaved_pct": interleaved.error_pct,
                          "change_pct": 100.0 * (interleaved.predicted_ms / one_f_one_b.predicted_ms - 1.0)})
    summary = table.assign(mape_1f1b_pct=table.error_1f1b_pct.abs(),
                           mape_interleaved_pct=table.error_interleaved_pct.abs()).groupby("scale").agg(
        rows=("change_pct", "size"), mape_1f1b_pct=("mape_1f1b_pct", "mean"),
        bias_1f1b_pct=("error_1f1b_pct", "mean"), mape_interleaved_pct=("mape_interleaved_pct", "mean"),
        bias_interleaved_pct=("error_interleaved_pct", "mean"), mean_change_pct=("change_pct", "mean"),
        min_change_pct=("change_pct", "min")).round(2)
    return ("Rows simulated with the interleaved schedule (the measurements ran 1F1B, so this shows how far "
            "interleaving moves the prediction, not its accuracy):\n" + summary.to_string())


def run(data_dir: Path, out_dir: Path, *, draw: bool = True, schedule: str = "auto",
        virtual_stages: int = 1, overlap_p2p_comm: bool = False) -> pd.DataFrame:
    rows = load_rows(data_dir)
    rows["fitted"] = fitting_mask(rows)
    results = simulate_rows(rows, build_setup(schedule=schedule, overlap_p2p_comm=overlap_p2p_comm),
                            virtual_stages)
    out_dir.mkdir(parents=True, exist_ok=True)
    results.to_csv(out_dir / "vtrain_predictions.csv", index=False, float_format="%.6g")
    if draw:
        plot(results, out_dir / "vtrain_predicted_vs_measured.png")
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("data_dir", nargs="?", type=Path, default=DEFAULT_DATA, help="directory of the two CSVs")
    parser.add_argument("--out", type=Path, default=REPO / "outputs" / "validation", help="where results go")
    parser.add_argument("--no-plot", action="store_true", help="skip the PNG")
    parser.add_argument("--schedule", default="auto", help="training.schedule (auto, 1f1b, interleaved_1f1b)")
    parser.add_argument("--virtual-stages", type=int, default=1, help="interleave the rows that allow it")
    parser.add_argument("--overlap-p2p-comm", action="store_true",
                        help="training.overlap_p2p_comm: post the interleaved schedule's steady sends asynchronously")
    args = parser.parse_args()
    if not all((args.data_dir / name).is_file() for name in FILES.values()):
        sys.exit(f"validate_vtrain: {args.data_dir} does not hold {' and '.join(FILES.values())}")
    start = time.perf_counter()
    results = run(args.data_dir, args.out, draw=not args.no_plot, schedule=args.schedule,
                  virtual_stages=args.virtual_stages, overlap_p2p_comm=args.overlap_p2p_comm)
    elapsed = time.perf_counter() - start
    print(f"{len(results)} measured runs simulated in {elapsed:.1f} s; results in {args.out}")
    print(report(results))
    if args.virtual_stages > 1:
        interleaved = results[results.virtual_stages > 1]
        print()
        print(interleaving_report(interleaved, simulate_rows(interleaved, build_setup())))


if __name__ == "__main__":
    main()
