"""Profile the equivalent shards of a workload and write their rows into the profile files.

Each distinct shard signature of a workload is one job. A job whose rows already exist for the
local device is skipped unless `replace` is set, so re-running a profile sweep only measures
what is missing. The workload's own FLOP and byte figures of each phase are stored beside the
counted ones: the store scales and the roofline fit compare like with like.
"""

from __future__ import annotations

import datetime
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ddlsim.compute.identity import DeviceIdentity
from ddlsim.compute.profile_file import encode_shape, format_number, profile_path, read_rows, write_rows
from ddlsim.compute.profile_settings import DEFAULT_SETTINGS, ProfileSettings
from ddlsim.core.types import Phase
from ddlsim.core.work import ComputeTask, ShardSignature, Workload

if TYPE_CHECKING:  # the profiler loads torch; it is imported when a job runs
    from ddlsim.compute.profiler import ShardMeasurement

TaskFigures = Mapping[Phase, tuple[float, float]]  # phase -> (flop, memory_bytes) of one task


@dataclass(frozen=True)
class ProfileJob:
    signature: ShardSignature
    figures: TaskFigures = field(default_factory=dict)


@dataclass(frozen=True)
class JobResult:
    job: ProfileJob
    path: Path
    status: str  # "profiled" or "kept" (rows existed and replace was not asked for)
    measurement: ShardMeasurement | None = None


def jobs_from_tasks(tasks: Iterable[ComputeTask]) -> list[ProfileJob]:
    """One job per distinct signature, in first-seen order, with each phase's task figures."""
    figures: dict[ShardSignature, dict[Phase, tuple[float, float]]] = {}
    for task in tasks:
        figures.setdefault(task.signature, {}).setdefault(task.phase, (task.flop, task.memory_bytes))
    return [ProfileJob(signature, phases) for signature, phases in figures.items()]


def jobs_from_workload(workload: Workload) -> list[ProfileJob]:
    return jobs_from_tasks(workload.compute_tasks())


def measurement_rows(signature: ShardSignature, measurement: ShardMeasurement, figures: TaskFigures,
                     date: str) -> list[dict[str, str]]:
    device = measurement.device
    rows = []
    for phase in measurement.phases:
        flop, memory_bytes = figures.get(phase.phase, (None, None))
        rows.append({
            "signature_key": signature.key(), "model_kind": signature.model_kind, "shape": encode_shape(signature),
            "local_batch": str(signature.local_batch), "precision": signature.precision.value,
            "checkpointing": "true" if signature.checkpointing else "false", "phase": phase.phase.value,
            "device": device.name, "time_s": format_number(phase.time_s),
            "statistic": measurement.statistic, "time_median_s": format_number(phase.time_median_s),
            "time_min_s": format_number(phase.time_min_s), "time_mean_s": format_number(phase.time_mean_s),
            "time_std_s": format_number(phase.time_std_s),
            "wall_time_s": format_number(phase.wall_time_s), "kernels": str(phase.kernels),
            "counted_flop": format_number(phase.counted_flop), "counted_bytes": format_number(phase.counted_bytes),
            "achieved_flop_per_s": format_number(phase.achieved_flop_per_s),
            "task_flop": format_number(flop), "task_memory_bytes": format_number(memory_bytes),
            "run_precision": measurement.run_precision, "iterations": str(measurement.iterations),
            "warmup": str(measurement.warmup), "torch_version": device.torch_version,
            "cuda_version": device.cuda_version, "date": date,
        })
    return rows


def _has_rows(path: Path, signature: ShardSignature, device_name: str) -> bool:
    key = signature.key()
    return any(row["signature_key"] == key and row["device"] == device_name for row in read_rows(path))


def default_builder(signature: ShardSignature, device: str) -> Any:
    from ddlsim.compute.equivalent_registry import build_equivalent_shard

    return build_equivalent_shard(signature, device)


def profile_jobs(jobs: Sequence[ProfileJob], identity: DeviceIdentity, output_dir: str | os.PathLike[str], *,
                 settings: ProfileSettings = DEFAULT_SETTINGS, replace: bool = False,
                 builder: Callable[[ShardSignature, str], Any] = default_builder,
                 progress: bool = True) -> list[JobResult]:
    """Measure every job on `identity`'s device and merge the rows into `output_dir`."""
    from tqdm.auto import tqdm

    from ddlsim.compute.profiler import profile_shard

    results: dict[int, JobResult] = {}
    todo = []
    for index, job in enumerate(jobs):
        path = profile_path(output_dir, identity.name, job.signature.model_kind)
        if not replace and _has_rows(path, job.signature, identity.name):
            results[index] = JobResult(job, path, "kept")
        else:
            todo.append((index, job, path))
    total = len(todo) * (settings.iterations + settings.warmup + 1)
    with tqdm(total=total, desc="profiling", unit="it", disable=not progress or not todo, leave=False) as bar:
        for index, job, path in todo:
            bar.set_postfix_str(job.signature.key(), refresh=False)
            shard = builder(job.signature, identity.torch_device)
            measurement = profile_shard(shard, identity, settings, progress=bar.update)
            bar.update(settings.warmup + 1)
            date = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
            write_rows(path, measurement_rows(job.signature, measurement, job.figures, date), replace=True)
            results[index] = JobResult(job, path, "profiled", measurement)
            del shard
    return [results[index] for index in range(len(jobs))]
