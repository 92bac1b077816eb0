"""`task=profile` measures a workload's equivalent shards; `task=compute_times` prices its compute tasks.

``ddlsim-profile [overrides]`` (`ddlsim.app.profile`) is ``ddlsim experiment=single task=profile
[overrides]``; ``--force`` stands for ``task.replace=true``. For example, on a machine with a GPU::

    ddlsim-profile model=megatron model.target_loss=2.5          # every shard of that plan
    ddlsim-profile -m model.target_loss=3.0,2.5,2.0              # one plan per target loss

Rows land in ``<run directory>/profiles/<device>/<model_kind>.csv`` for the device that ran
them (``task.output_dir`` chooses another directory). Simulations with that device read them
through ``compute.profile_dirs=[<that directory>]``. The repository's shipped ``profiles/`` is
written only with ``task.overwrite=true``.

Before any measurement, every shard's training memory is estimated (`check_fits`); a shard that
would not fit the local device (on a CPU: the available RAM) is refused with `InfeasibleError`,
its estimate, and a ``task.local_batches`` that would fit.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from ddlsim.compute.identity import local_identity
from ddlsim.compute.model import SHIPPED_PROFILES
from ddlsim.compute.profile_file import parse_signature_key
from ddlsim.compute.profile_settings import ProfileSettings
from ddlsim.compute.profiling import ProfileJob, default_builder, jobs_from_workload, profile_jobs
from ddlsim.core.errors import ConfigError
from ddlsim.core.registry import TASKS
from ddlsim.report.table import quantity_table
from ddlsim.tasks.base import Components, Row, TaskResult


@dataclass
class ProfileTaskConfig:
    """Which shards to measure (the workload's, or `signatures`), how long, and where to write."""

    name: str = "profile"
    iterations: int = 20
    warmup: int = 3
    statistic: str = "median"
    torch_device: str = "auto"
    cpu_threads: int = 0
    output_dir: str = ""  # empty: <run directory>/profiles
    replace: bool = False  # re-measure shards whose rows exist
    overwrite: bool = False  # allow writing into the shipped profiles/ directory
    signatures: list[str] = field(default_factory=list)
    local_batches: list[int] = field(default_factory=list)
    kinds: list[str] = field(default_factory=list)
    progress: bool = True


def _inside(path: Path, directory: Path) -> bool:
    return path.resolve() == directory.resolve() or directory.resolve() in path.resolve().parents


def _ratio(counted: float, expected: float | None) -> float | None:
    return counted / expected if expected else None


@TASKS.register("profile", ProfileTaskConfig)
@dataclass(frozen=True)
class ProfileTask:
    """Measure equivalent shards with torch.profiler and write profiles/<device>/<kind>.csv."""

    reads: ClassVar[tuple[str, ...]] = ("model", "parallel", "device", "compute")

    settings: ProfileSettings
    torch_device: str
    cpu_threads: int
    output_dir: Path | None
    replace: bool
    signatures: tuple[str, ...]
    local_batches: tuple[int, ...]
    kinds: tuple[str, ...]
    progress: bool

    @classmethod
    def from_config(cls, config: ProfileTaskConfig) -> ProfileTask:
        settings = ProfileSettings(iterations=config.iterations, warmup=config.warmup, statistic=config.statistic)
        if config.cpu_threads < 0:
            raise ConfigError("cpu_threads", config.cpu_threads, "must be >= 1, or 0 to keep torch's thread count")
        for batch in config.local_batches:
            if batch < 1:
                raise ConfigError("local_batches", batch, "every local batch must be >= 1")
        for key in config.signatures:
            parse_signature_key(key)
        output_dir = Path(config.output_dir).expanduser() if config.output_dir else None
        if output_dir is not None and _inside(output_dir, SHIPPED_PROFILES) and not config.overwrite:
            raise ConfigError("output_dir", config.output_dir,
                              "holds the shipped profiles; set task.overwrite=true to write into them")
        return cls(settings, config.torch_device, config.cpu_threads, output_dir, config.replace,
                   tuple(config.signatures), tuple(config.local_batches), tuple(config.kinds), config.progress)

    def jobs(self, components: Components) -> list[ProfileJob]:
        if self.signatures:
            jobs = [ProfileJob(parse_signature_key(key)) for key in self.signatures]
        else:
            workload = components.model.build_workload(components.parallel, components.device.memory_bytes)
            jobs = jobs_from_workload(workload)
        if self.kinds:
            jobs = [job for job in jobs if job.signature.model_kind in self.kinds]
        if self.local_batches:  # other batches than the plan's: the plan's FLOP figures no longer apply
            jobs = [ProfileJob(dataclasses.replace(job.signature, local_batch=batch))
                    for job in jobs for batch in self.local_batches]
        return list({job.signature: job for job in jobs}.values())

    def directory(self, components: Components) -> Path:
        if self.output_dir is not None:
            return self.output_dir
        if components.output_dir is None:
            raise ConfigError("task.output_dir", "", "is required when the run has no directory of its own "
                                                     "(ddlsim.run); name the directory for the profiles")
        return components.output_dir / "profiles"

    def run(self, components: Components) -> TaskResult:
        from ddlsim.compute.profiler import check_fits  # loads torch

        output_dir = self.directory(components)
        if self.cpu_threads:  # the thread count is part of a CPU's profile name
            import torch

            torch.set_num_threads(self.cpu_threads)
        identity = local_identity(self.torch_device)
        jobs = self.jobs(components)
        for job in jobs:
            check_fits(job.signature, default_builder, identity.torch_device, identity.name)
        results = profile_jobs(jobs, identity, output_dir, settings=self.settings,
                               replace=self.replace, progress=self.progress)
        rows: list[Row] = []
        for result in results:
            base = {"signature_key": result.job.signature.key(), "device": identity.name, "status": result.status,
                    "profile_path": str(result.path)}
            if result.measurement is None:
                rows.append({**base, "phase": "", "time_s": None, "kernels": None, "achieved_flop_per_s": None,
                             "counted_flop": None, "task_flop": None, "flop_ratio": None})
                continue
            for phase in result.measurement.phases:
                task_flop = result.job.figures.get(phase.phase, (None, None))[0]
                rows.append({**base, "phase": phase.phase.value, "time_s": phase.time_s, "kernels": phase.kernels,
                             "achieved_flop_per_s": phase.achieved_flop_per_s, "counted_flop": phase.counted_flop,
                             "task_flop": task_flop, "flop_ratio": _ratio(phase.counted_flop, task_flop)})
        summary = quantity_table(rows, {"signature_key": None, "phase": None, "status": None, "time_s": "time_s",
                                        "kernels": None, "achieved_flop_per_s": "flop_per_s", "flop_ratio": None},
                                 {"time_s": "time", "achieved_flop_per_s": "achieved"})
        note = (f"\nprofiles of {identity.name!r} in {output_dir} (simulate with them: "
                f"compute.profile_dirs=[{output_dir}])"
                + ("" if identity.name == components.device.profile_name else
                   f"\n(the configured device={components.device.name} reads profiles of "
                   f"{components.device.profile_name!r}; simulate on this machine's device to use these)"))
        return TaskResult(rows=rows, summary=summary + note)


@dataclass
class ComputeTimesTaskConfig:
    name: str = "compute_times"


@TASKS.register("compute_times", ComputeTimesTaskConfig)
@dataclass(frozen=True)
class ComputeTimesTask:
    """Price every compute task of the workload on the device: time, source (measured/scaled/roofline)."""

    reads: ClassVar[tuple[str, ...]] = ("model", "parallel", "device", "compute")

    @classmethod
    def from_config(cls, config: ComputeTimesTaskConfig) -> ComputeTimesTask:
        del config
        return cls()

    def run(self, components: Components) -> TaskResult:
        workload = components.model.build_workload(components.parallel, components.device.memory_bytes)
        rows: list[Row] = []
        for block in workload.blocks:
            for task in block.tasks:
                if not hasattr(task, "flop"):
                    continue  # a collective call
                estimate = components.compute.estimate(task)
                rows.append({
                    "block": block.name, "task": task.name, "phase": task.phase.value,
                    "signature_key": task.signature.key(), "count": task.count, "repeat": block.repeat,
                    "flop": task.flop, "memory_bytes": task.memory_bytes, "time_s": estimate.time_s,
                    "total_time_s": estimate.time_s * task.count * block.repeat,
                    "compute_source": estimate.source.value, "compute_device": estimate.device,
                })
        summary = quantity_table(rows, {"block": None, "task": None, "phase": None, "count": None, "repeat": None,
                                        "time_s": "time_s", "total_time_s": "time_s", "compute_source": None},
                                 {"time_s": "time", "total_time_s": "total time"})
        return TaskResult(rows=rows, summary=summary)
