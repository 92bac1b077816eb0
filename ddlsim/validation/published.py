"""Score ddlsim on published training runs: vTrain's measured A100 runs, Megatron-LM SC'21 Table 1
and Llama 3 Table 4 (`../shared/validation/`), with the at-scale costs on, and leave one source out.

    python scripts/validate_published.py [--out DIR] [--quick]

Every row is simulated twice: with every at-scale cost off (``off_s``, the default), and with
interference and framework work on and the stragglers' cost per unit of GPU-speed deviation, so
that a row's predicted iteration time at any deviation sigma is ``base_s + sigma x unit_s``.
sigma is the one constant fitted here: for each source, on the rows of the other sources (each
source weighing the same: the mean of their MAPEs), and scored on the source left out; the
in-sample fit uses every source. The other constants are cited (`ddlsim.training.at_scale`) or
were fitted before on vTrain's single-node rows alone (`configs/compute/a100_megatron.yaml`).
Errors are of the iteration time, (predicted - measured) / measured: negative is too fast.
docs/validation.md has the settings of each source and which rows informed which constant.
"""

from __future__ import annotations

import argparse
import dataclasses
import time
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.optimize import minimize_scalar

from ddlsim.training.at_scale.settings import AtScaleSettings
from ddlsim.validation import published_tables, vtrain

REPO = Path(__file__).resolve().parents[2]
DATA = REPO.parent / "shared" / "validation"
SOURCES = ("vtrain_single", "vtrain_multi", "megatron_t1", "llama3_t4")
UNIT_SIGMA = 0.5  # the stragglers are computed at this deviation; unit_s is their cost per unit of it
COLUMNS = ["source", "case", "gpus", "measured_s", "base_s", "unit_s", "off_s", "settings"]


def at_scale_unit() -> AtScaleSettings:
    return AtScaleSettings(interference=True, stragglers=True, framework=True, speed_sigma=UNIT_SIGMA)


def vtrain_rows(data: Path, quick: bool, at_scale: AtScaleSettings) -> pd.DataFrame:
    rows = vtrain.load_rows(data / "vtrain")
    if quick:  # every multi-node row, a fixed tenth of the single-node ones
        rows = rows[(rows.scale == "multi-node") | (rows.source_row % 10 == 0)]
    results = vtrain.simulate_rows(rows, vtrain.build_setup(at_scale=at_scale))
    stragglers = results.straggler_ms / 1e3
    return pd.DataFrame({
        "source": np.where(results.scale == "multi-node", "vtrain_multi", "vtrain_single"),
        "case": [f"{p}B {g} GPUs tp{t} dp{d} pp{q} mb{m}" for p, g, t, d, q, m in zip(
            results.params_billion.fillna(0), results.gpus, results.tp, results.dp, results.pp, results.micro_batch,
            strict=True)],
        "gpus": results.gpus, "measured_s": results.measured_ms / 1e3,
        "base_s": results.predicted_ms / 1e3 - stragglers, "unit_s": stragglers / UNIT_SIGMA,
        "settings": "as measured (vTrain's data)"})


def _simulated(data: Path, quick: bool, at_scale: AtScaleSettings) -> pd.DataFrame:
    frames = [vtrain_rows(data, quick, at_scale), published_tables.megatron_rows(data / "published", at_scale),
              published_tables.llama3_rows(data / "published", at_scale)]
    return pd.concat(frames, ignore_index=True)


def predictions(data: Path = DATA, *, quick: bool = False) -> pd.DataFrame:
    """One row per published run (`COLUMNS`): with the costs on (per unit of deviation) and off."""
    frame = _simulated(data, quick, at_scale_unit())
    frame["off_s"] = _simulated(data, quick, AtScaleSettings()).base_s.to_numpy()
    return frame[COLUMNS]


def errors(frame: pd.DataFrame, sigma: float) -> pd.Series:
    predicted = frame.base_s + sigma * frame.unit_s
    return (predicted - frame.measured_s) / frame.measured_s


def source_mapes(frame: pd.DataFrame, sigma: float) -> pd.Series:
    return errors(frame, sigma).abs().groupby(frame.source).mean()


def fit_sigma(frame: pd.DataFrame) -> float:
    """The deviation that minimises the mean over `frame`'s sources of their MAPE."""
    best = minimize_scalar(lambda sigma: source_mapes(frame, sigma).mean(), bounds=(0.0, 0.2), method="bounded",
                           options={"xatol": 1e-5})
    return float(best.x)


@dataclasses.dataclass(frozen=True)
class Scores:
    sigma_all: float
    in_sample: pd.DataFrame  # per source: rows, MAPE, max, bias with sigma fitted on every source
    held_out: pd.DataFrame  # per source: sigma fitted without it, and its scores
    rows: pd.DataFrame  # every row with its in-sample and held-out error


def _summary(frame: pd.DataFrame, error: pd.Series) -> dict[str, float]:
    return {"rows": len(frame), "mape_pct": 100 * error.abs().mean(), "max_pct": 100 * error.abs().max(),
            "bias_pct": 100 * error.mean()}


def _off_summary(frame: pd.DataFrame) -> dict[str, float]:
    error = (frame.off_s - frame.measured_s) / frame.measured_s
    return {"off_mape_pct": 100 * error.abs().mean(), "off_max_pct": 100 * error.abs().max()}


def score(frame: pd.DataFrame) -> Scores:
    sigma_all = fit_sigma(frame)
    rows = frame.assign(error_in_sample=errors(frame, sigma_all), error_held_out=np.nan, sigma_held_out=np.nan)
    in_sample, held_out = [], []
    for source in SOURCES:
        mine = frame.source == source
        if not mine.any():
            continue
        sigma = fit_sigma(frame[~mine])
        held = errors(frame[mine], sigma)
        rows.loc[mine, "error_held_out"] = held
        rows.loc[mine, "sigma_held_out"] = sigma
        in_sample.append({"source": source, **_off_summary(frame[mine]),
                          **_summary(frame[mine], rows.error_in_sample[mine])})
        held_out.append({"source": source, "sigma_fitted_without": sigma, **_summary(frame[mine], held)})
    return Scores(sigma_all, pd.DataFrame(in_sample), pd.DataFrame(held_out), rows)


def report(scores: Scores, *, per_row: bool = True) -> str:
    parts = [f"sigma fitted on every source: {100 * scores.sigma_all:.2f} % (GPU speed deviation of the straggler "
             "model)", "", "Costs off (off_*), and on in sample (sigma fitted on every source):",
             scores.in_sample.round(2).to_string(index=False), "",
             "Leave one source out (sigma fitted on the other sources, scored on this one):",
             scores.held_out.assign(sigma_fitted_without=100 * scores.held_out.sigma_fitted_without).rename(
                 columns={"sigma_fitted_without": "sigma_pct"}).round(2).to_string(index=False)]
    if per_row:
        for source in ("megatron_t1", "llama3_t4"):
            rows = scores.rows[scores.rows.source == source]
            table = rows[["case", "gpus", "measured_s", "settings"]].assign(
                off_error_pct=100 * (rows.off_s - rows.measured_s) / rows.measured_s,
                predicted_s=rows.base_s + scores.sigma_all * rows.unit_s,
                error_pct=100 * rows.error_in_sample, held_out_error_pct=100 * rows.error_held_out)
            parts += ["", f"{source}, per row:", table.round(3).to_string(index=False)]
    return "\n".join(parts)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DATA, help="the shared validation directory")
    parser.add_argument("--out", type=Path, default=REPO / "outputs" / "validation", help="where the CSV goes")
    parser.add_argument("--quick", action="store_true", help="a tenth of vTrain's single-node rows")
    args = parser.parse_args(argv)
    start, start_cpu = time.perf_counter(), time.process_time()
    frame = predictions(args.data, quick=args.quick)
    scores = score(frame)
    args.out.mkdir(parents=True, exist_ok=True)
    scores.rows.to_csv(args.out / "published_predictions.csv", index=False, float_format="%.6g")
    print(report(scores))
    print(f"\n{len(frame)} runs, each simulated with the costs on and off, in {time.perf_counter() - start:.1f} s "
          f"wall, {time.process_time() - start_cpu:.1f} s CPU; rows in {args.out / 'published_predictions.csv'}")
    return 0
