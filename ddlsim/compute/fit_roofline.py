"""Fit the roofline's efficiency factors to measured profiles, and report the error on held-out shapes.

    python scripts/fit_roofline.py profiles/<device-slug> --device h100_sxm
    python scripts/fit_roofline.py profiles/amd-epyc-...-1-thread --device cpu --peak 166GFLOPS

For every work class (gemm, embedding, elementwise) it searches a grid of (flop efficiency,
memory efficiency, per-task overhead) for the values that minimise the mean absolute log error
of ``max(flop / (peak x e_flop), bytes / (bandwidth x e_mem)) + overhead`` against the measured
time of each profile row. The rows are split before fitting: every shard shape (the signature
without its local batch) goes wholly to the fitting set or wholly to the held-out set (one shape
in `--holdout-every` of each model kind, picked by a hash of the shape), so the reported error is
on shapes the fit never saw. The defaults of the
`compute` group are scored on the same held-out rows for comparison.

`--peak` / `--bandwidth` replace the device's datasheet figures (all precisions), for devices
such as a CPU whose datasheet entry is a placeholder; an efficiency above 1 means the datasheet
understates the device, and the script says so.

``--kernels`` fits the kernel-level roofline instead (`compute.kernels.*`,
ddlsim/compute/kernel_roofline.py) to the rows of model kinds with kernel lists (GPT and
Megatron layers, output layers, embeddings, optimizer shards): its GEMM efficiency, memory
efficiency and per-kernel device gap, by a grid search of the same error. Profiles time the GPU
only, so the host launch cost is not fitted here (scripts/fit_vtrain.py fits it from whole
iteration times).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import zlib
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ddlsim.compute.devices import DeviceConfig, DeviceSpec
from ddlsim.compute.kernel_registry import has_kernels, kernels_for
from ddlsim.compute.kernel_roofline import KernelEfficiency, gemm_utilisation
from ddlsim.compute.model import ComputeConfig
from ddlsim.compute.profile_file import ProfileRow, parse_row, read_rows
from ddlsim.compute.roofline import DEFAULT_KIND_CLASSES, WORK_CLASSES, Efficiency, Roofline
from ddlsim.core import units
from ddlsim.core.types import Precision

FLOP_GRID = np.geomspace(0.001, 50.0, 120)
MEMORY_GRID = np.geomspace(0.001, 50.0, 120)
OVERHEAD_GRID_S = np.concatenate([[0.0], np.geomspace(1e-7, 1e-2, 41)])


@dataclass(frozen=True)
class Fit:
    flop: float
    memory: float
    overhead_s: float


def shape_key(row: ProfileRow) -> str:
    """The signature key without its local batch: `kind|shape|precision|ckpt`."""
    kind, shape, _batch, precision, checkpointing = row.signature.key().split("|")
    return f"{kind}|{shape}|{precision}|{checkpointing}"


def held_out_shapes(rows: list[ProfileRow], every: int) -> set[str]:
    """One shape in `every` of each model kind, chosen by a hash of the shape (deterministic),
    so that every kind with at least two shapes is both fitted and tested."""
    by_kind: dict[str, set[str]] = defaultdict(set)
    for row in rows:
        by_kind[row.signature.model_kind].add(shape_key(row))
    held = set()
    for shapes in by_kind.values():
        ordered = sorted(shapes, key=lambda key: (zlib.crc32(key.encode()), key))
        held.update(key for index, key in enumerate(ordered) if index % every == every - 1)
    return held


def fit_class(rows: list[ProfileRow], device: DeviceSpec) -> Fit:
    """Grid search of the mean absolute log error, vectorised over the flop x memory grid."""
    peaks = np.array([device.peak(row.signature.precision) for row in rows])
    flop = np.array([row.flop for row in rows])
    memory = np.array([row.memory_bytes for row in rows])
    measured = np.log(np.array([row.time_s for row in rows]))
    compute_s = flop[None, :] / (peaks[None, :] * FLOP_GRID[:, None])               # (F, rows)
    memory_s = memory[None, :] / (device.memory_bandwidth_bytes_per_s * MEMORY_GRID[:, None])  # (M, rows)
    roof_s = np.maximum(compute_s[:, None, :], memory_s[None, :, :])               # (F, M, rows)
    best = (np.inf, Fit(1.0, 1.0, 0.0))
    for overhead_s in OVERHEAD_GRID_S:
        error = np.abs(np.log(roof_s + overhead_s) - measured).mean(axis=2)
        f, m = np.unravel_index(np.argmin(error), error.shape)
        if error[f, m] < best[0] - 1e-12:
            best = (float(error[f, m]), Fit(float(FLOP_GRID[f]), float(MEMORY_GRID[m]), float(overhead_s)))
    return best[1]


def predict_s(row: ProfileRow, fit: Fit, device: DeviceSpec) -> float:
    """The roofline formula with `fit`'s factors (which may exceed 1 against a placeholder datasheet)."""
    compute_s = row.flop / (device.peak(row.signature.precision) * fit.flop)
    memory_s = row.memory_bytes / (device.memory_bandwidth_bytes_per_s * fit.memory)
    return max(compute_s, memory_s) + fit.overhead_s


def percent_errors(rows: list[ProfileRow], fits: dict[str, Fit], roofline: Roofline) -> list[float]:
    errors = []
    for row in rows:
        fit = fits[roofline.work_class(row.signature, row.phase)]
        errors.append(100 * abs(predict_s(row, fit, roofline.device) - row.time_s) / row.time_s)
    return errors


def load(paths: list[Path]) -> list[ProfileRow]:
    files = [file for path in paths for file in (sorted(path.glob("*.csv")) if path.is_dir() else [path])]
    rows = [parse_row(raw, file) for file in files for raw in read_rows(file)]
    devices = sorted({row.device for row in rows})
    if len(devices) > 1:
        sys.exit(f"fit_roofline: the rows come from several devices {devices}; fit one device at a time")
    return [row for row in rows if row.time_s > 0 and (row.flop > 0 or row.memory_bytes > 0)]


def device_spec(name: str, peak: str, bandwidth: str) -> DeviceSpec:
    config = DeviceConfig(name=name, memory_bandwidth=bandwidth)
    if peak:
        for precision in Precision:
            setattr(config, f"peak_{precision.value}", peak)
    return DeviceSpec.from_config(config)


def defaults_roofline(device: DeviceSpec) -> Roofline:
    config = ComputeConfig()
    return Roofline(device, {name: Efficiency(getattr(config, name).flop, getattr(config, name).memory)
                             for name in WORK_CLASSES}, DEFAULT_KIND_CLASSES)


def summary(label: str, errors: list[float]) -> str:
    if not errors:
        return f"{label}: no rows"
    return (f"{label}: {len(errors)} rows, mean {statistics.fmean(errors):.1f} %, "
            f"median {statistics.median(errors):.1f} %, max {max(errors):.1f} %")


# ---- the kernel-level roofline (--kernels) -------------------------------------------------------
KERNEL_EFFICIENCY_GRID = np.linspace(0.2, 1.0, 41)
KERNEL_GAP_GRID_S = np.concatenate([[0.0], np.geomspace(1e-7, 1e-4, 31)])


@dataclass(frozen=True)
class KernelFeatures:
    """The kernels of all rows, flattened: seconds at full efficiency, and which row each belongs to."""

    compute_s: np.ndarray
    memory_s: np.ndarray
    row: np.ndarray
    kernels_per_row: np.ndarray


def kernel_features(rows: list[ProfileRow], device: DeviceSpec) -> KernelFeatures:
    compute, memory, owner, counts = [], [], [], []
    for index, row in enumerate(rows):
        kernels = [kernel for kernel in kernels_for(row.signature, row.phase) if kernel.on_device]
        peak = device.peak(row.signature.precision)
        for kernel in kernels:
            use = gemm_utilisation(kernel.m, kernel.n, kernel.batch) if kernel.is_gemm else 1.0
            compute.append(kernel.flop / (peak * use))
            memory.append(kernel.bytes / device.memory_bandwidth_bytes_per_s)
            owner.append(index)
        counts.append(len(kernels))
    return KernelFeatures(np.array(compute), np.array(memory), np.array(owner, dtype=int), np.array(counts))


def kernel_times_s(features: KernelFeatures, gemm: float, memory: float, gap_s: float) -> np.ndarray:
    per_kernel = np.maximum(features.compute_s / gemm, features.memory_s / memory)
    return np.bincount(features.row, per_kernel, minlength=len(features.kernels_per_row)) + \
        features.kernels_per_row * gap_s


def fit_kernels(rows: list[ProfileRow], device: DeviceSpec) -> KernelEfficiency:
    """Grid search of (gemm, memory, device gap) minimising the mean absolute log error."""
    features = kernel_features(rows, device)
    measured = np.log(np.array([row.time_s for row in rows]))
    best = (np.inf, KernelEfficiency())
    for gemm in KERNEL_EFFICIENCY_GRID:
        for memory in KERNEL_EFFICIENCY_GRID:
            base = kernel_times_s(features, gemm, memory, 0.0)
            times = base[None, :] + features.kernels_per_row[None, :] * KERNEL_GAP_GRID_S[:, None]
            errors = np.abs(np.log(times) - measured[None, :]).mean(axis=1)
            gap = int(np.argmin(errors))
            if errors[gap] < best[0] - 1e-12:
                best = (float(errors[gap]), KernelEfficiency(gemm=float(gemm), memory=float(memory),
                                                             device_s_per_kernel=float(KERNEL_GAP_GRID_S[gap])))
    return best[1]


def kernel_percent_errors(rows: list[ProfileRow], efficiency: KernelEfficiency, device: DeviceSpec) -> list[float]:
    if not rows:
        return []
    times = kernel_times_s(kernel_features(rows, device), efficiency.gemm, efficiency.memory,
                           efficiency.device_s_per_kernel)
    return [100 * abs(time_s - row.time_s) / row.time_s for time_s, row in zip(times, rows, strict=True)]


def main_kernels(rows: list[ProfileRow], held: set[str], device: DeviceSpec) -> None:
    rows = [row for row in rows if has_kernels(row.signature.model_kind)]
    fitting = [row for row in rows if shape_key(row) not in held]
    held_out = [row for row in rows if shape_key(row) in held]
    if not fitting:
        sys.exit("fit_roofline --kernels: no profile row of a model kind with a kernel list")
    efficiency = fit_kernels(fitting, device)
    print(f"kernel roofline: gemm efficiency {efficiency.gemm:.3f}, memory efficiency {efficiency.memory:.3f}, "
          f"device gap {units.format_time_s(efficiency.device_s_per_kernel)} per kernel ({len(fitting)} rows)")
    print(summary("fitted, on the fitting rows ", kernel_percent_errors(fitting, efficiency, device)))
    print(summary("fitted, on held-out shapes  ", kernel_percent_errors(held_out, efficiency, device)))
    print(f"overrides: compute.kernels.enabled=true compute.kernels.gemm={efficiency.gemm:.3f} "
          f"compute.kernels.memory={efficiency.memory:.3f} "
          f"compute.kernels.device_per_kernel={efficiency.device_s_per_kernel:.3g}s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("paths", nargs="+", type=Path, help="profile directories (one device) or CSV files")
    parser.add_argument("--device", default="cpu", help="datasheet entry whose peaks the efficiencies refer to")
    parser.add_argument("--peak", default="", help="peak FLOP/s for every precision, e.g. 166GFLOPS")
    parser.add_argument("--bandwidth", default="", help="memory bandwidth, e.g. 50GB/s")
    parser.add_argument("--holdout-every", type=int, default=3, help="hold out one shape in N of each model kind")
    parser.add_argument("--kernels", action="store_true", help="fit the kernel-level roofline (compute.kernels.*)")
    args = parser.parse_args()

    device = device_spec(args.device, args.peak, args.bandwidth)
    rows = load(args.paths)
    held = held_out_shapes(rows, args.holdout_every)
    fitting = [row for row in rows if shape_key(row) not in held]
    held_out = [row for row in rows if shape_key(row) in held]
    print(f"device {rows[0].device if rows else '?'}; peaks of '{device.name}': "
          f"fp16 {units.format_flop_per_s(device.peak('fp16'))}, fp32 {units.format_flop_per_s(device.peak('fp32'))}, "
          f"memory {units.format_bandwidth_bps(device.memory_bandwidth_bps)}")
    print(f"{len(rows)} rows of {len({shape_key(r) for r in rows})} shapes: {len(fitting)} to fit, "
          f"{len(held_out)} held out ({len({shape_key(r) for r in held_out})} shapes never seen by the fit)")
    for key in sorted({shape_key(r) for r in held_out}):
        print(f"  held out: {key}")
    if args.kernels:
        main_kernels(rows, held, device)
        return

    roofline = defaults_roofline(device)
    by_class: dict[str, list[ProfileRow]] = defaultdict(list)
    for row in fitting:
        by_class[roofline.work_class(row.signature, row.phase)].append(row)
    defaults = {name: Fit(e.flop, e.memory, e.overhead_s) for name, e in roofline.efficiencies.items()}
    fits = dict(defaults)
    overrides = []
    for work_class in WORK_CLASSES:
        if not by_class[work_class]:
            continue
        fit = fit_class(by_class[work_class], device)
        fits[work_class] = fit
        print(f"{work_class}: flop efficiency {fit.flop:.3f}, memory efficiency {fit.memory:.3f}, "
              f"overhead {units.format_time_s(fit.overhead_s)} ({len(by_class[work_class])} rows)")
        for name, value in (("flop", fit.flop), ("memory", fit.memory)):
            if value > 1:
                print(f"  {name} efficiency {value:.2f} > 1: the datasheet of '{device.name}' understates this "
                      f"device; pass --peak/--bandwidth (or set device.peak_*/memory_bandwidth) and fit again")
        overrides += [f"compute.{work_class}.flop={fit.flop:.3f}", f"compute.{work_class}.memory={fit.memory:.3f}",
                      f"compute.{work_class}.overhead={fit.overhead_s:.3g}s"]
    print(summary("fitted, on the fitting rows ", percent_errors(fitting, fits, roofline)))
    print(summary("fitted, on held-out shapes  ", percent_errors(held_out, fits, roofline)))
    print(summary("defaults, on held-out shapes", percent_errors(held_out, defaults, roofline)))
    print("overrides: " + " ".join(overrides))


if __name__ == "__main__":
    main()
