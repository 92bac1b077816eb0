"""`ddlsim.simulate(program, fabric=..., device=..., collective=..., compute=...)`: one captured
step priced on a fabric, as the standard training result.

    program = ddlsim.capture(build, (8, 8), ("dp", "tp"))
    result = ddlsim.simulate(program, fabric="superpod", device="h100_sxm", collective="best")
    result.iteration_time_s, result.compute_time_s, result.comm_time_s, result.exposed_comm_time_s
    result.row()        # the same row `task=train` writes

`fabric`, `device`, `collective` and `compute` take names (as on the command line: a registered
name or a YAML variant in ``configs/``), config mappings, or built objects
(`ddlsim.core.registry.build`, `ddlsim.compute.options.build_compute`). ``compute="measured"``
replays the captured ops on the local GPU under `torch.profiler` (`replay.py`).

A capture whose peak live tensor bytes on a captured rank exceed the device's memory is an
`InfeasibleError` naming the rank, its peak and the device memory; ``check_memory=False``
(``model.check_memory=false``) prices it anyway. With ``compute.fusion`` (the default compute;
not ``compute=a100_megatron``) runs of memory-bound ops are priced as one kernel each
(`fusion.py`). The row carries the step's batch and throughput (`throughput.py`):
``global_batch``, ``seq_len``, ``tokens_per_step``, ``samples_per_s``, ``tokens_per_s``,
``model_flop_per_step``, ``mfu`` (model FLOPs per second over the device's dense peak at the
precision of most of those FLOPs, times the GPUs) and ``memory_per_gpu_bytes`` (the largest
captured rank's peak).
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from ddlsim.capture.fusion import fuse_events
from ddlsim.capture.graph import build_program_graph
from ddlsim.capture.pricing import SegmentPricer, precision_of
from ddlsim.capture.program import CapturedProgram
from ddlsim.capture.throughput import model_flop, step_batch
from ddlsim.compute.options import build_compute
from ddlsim.core.errors import ConfigError, InfeasibleError
from ddlsim.core.registry import build
from ddlsim.core.types import Precision
from ddlsim.core.work import Workload
from ddlsim.training.energy import network_energy
from ddlsim.training.graph import IterationGraph
from ddlsim.training.pricing import Pricer
from ddlsim.training.run import network_timer, reduction_model
from ddlsim.training.settings import TrainingSettings
from ddlsim.training.simulate import TrainingResult, at_scale, peak_of, placed
from ddlsim.training.timeline import Placement, summarize


@dataclass(frozen=True)
class ProgramResult(TrainingResult):
    """A `TrainingResult` that also keeps its graph and placement (for ``trace.json``)."""

    graph: IterationGraph = field(default_factory=IterationGraph, repr=False)
    placement: Placement | None = field(default=None, repr=False)
    details: Mapping[int, Mapping[str, Any]] = field(default_factory=dict, repr=False)

    @property
    def iteration_time_s(self) -> float:
        return self.iteration.iteration_time_s

    @property
    def compute_time_s(self) -> float:
        return self.iteration.compute_time_s

    @property
    def comm_time_s(self) -> float:
        return self.iteration.comm_time_s

    @property
    def exposed_comm_time_s(self) -> float:
        return self.iteration.exposed_comm_time_s

    @property
    def samples_per_s(self) -> float:
        if not self.workload.plan.get("tokens_per_step"):
            return math.nan  # the batch is unknown (throughput.py)
        return super().samples_per_s


def model_precision(program: CapturedProgram) -> Precision:
    """The precision of most of the step's FLOPs (what `mfu` takes the device's peak at)."""
    rows = program.events[program.events.flop > 0]
    if rows.empty:
        return Precision.BF16
    return precision_of(str(rows.groupby("dtype")["flop"].sum().idxmax()))


def program_workload(program: CapturedProgram) -> Workload:
    """The workload record of a capture (no blocks: its graph comes from the program itself)."""
    batch = step_batch(program)
    peaks = program.peak_memory_bytes
    plan: dict[str, Any] = {"num_gpus": program.num_ranks,
                            "mesh_shape": "x".join(str(size) for size in program.mesh_shape),
                            "mesh_dim_names": ",".join(program.mesh_dim_names),
                            "pp_degree": len(program.ranks),
                            "captured_ranks": ",".join(str(rank) for rank in program.ranks),
                            "seq_len": batch.seq_len, "tokens_per_step": batch.tokens, "batch_source": batch.source,
                            "model_flop_per_step": model_flop(program), "precision": model_precision(program).value,
                            "memory_per_gpu_bytes": max(peaks.values()) if peaks else 0}
    for name, size in zip(program.mesh_dim_names, program.mesh_shape, strict=True):
        plan[f"mesh_{name}"] = size
    return Workload(name=program.name, num_ranks=program.num_ranks, blocks=(), global_batch=batch.global_batch,
                    plan=plan)


def check_memory_fits(program: CapturedProgram, memory_bytes: int, device_name: str = "the device") -> None:
    """InfeasibleError when a captured rank's peak live tensor bytes exceed `memory_bytes`."""
    for rank, peak in sorted(program.peak_memory_bytes.items()):
        if memory_bytes and peak > memory_bytes:
            raise InfeasibleError(
                f"captured rank {rank} needs {peak / 1e9:.2f} GB of live tensors at its peak but {device_name} has "
                f"{memory_bytes / 1e9:.2f} GB of memory; shard more, recompute, or price it anyway with "
                "check_memory=False (model.check_memory=false)")


def check_fits(program: CapturedProgram, fabric: Any) -> None:
    nodes = getattr(fabric, "num_nodes", None)
    if isinstance(nodes, int) and program.num_ranks > nodes:
        raise InfeasibleError(
            f"the capture's mesh {'x'.join(map(str, program.mesh_shape))} has {program.num_ranks} ranks but fabric "
            f"{getattr(fabric, 'name', fabric)!r} has {nodes} nodes ({program.num_ranks - nodes} too many); "
            "capture a smaller mesh or use a larger fabric")


def simulate_program(program: CapturedProgram, fabric: Any, algorithm: Any, device: Any, compute_model: Any,
                     settings: TrainingSettings | None = None, *, check_memory: bool = True) -> ProgramResult:
    """Built objects in, `ProgramResult` out (the library call behind `simulate` and `model=program`)."""
    check_fits(program, fabric)
    if check_memory:
        check_memory_fits(program, getattr(device, "memory_bytes", 0), f"device {getattr(device, 'name', device)!r}")
    workload = program_workload(program)
    collective_pricer = Pricer(network_timer(fabric, algorithm, reduction_model(device)), lambda task: None)
    measured = None
    if getattr(compute_model, "source", "") == "measured":  # compute=measured: replay the ops on this GPU
        from ddlsim.capture.replay import measure_ops

        measured = {key: time_s for rank in program.ranks for key, time_s in measure_ops(program, rank=rank).items()}
    elif getattr(compute_model, "fusion", False):
        program = replace(program, events=fuse_events(program.events))
    graph, details = build_program_graph(program, collective_pricer, SegmentPricer(compute_model, measured))
    settings = settings or TrainingSettings()
    placement = placed(graph, settings, fabric, captured=True)
    summary, costs, failures = at_scale(summarize(graph, placement), workload, settings, device)
    energy = network_energy(fabric, program.num_ranks, summary.iteration_time_s, 0)
    return ProgramResult(workload=workload, settings=settings, iteration=summary, energy=energy, graph=graph,
                         placement=placement, details=details, peak_flop_per_s=peak_of(device, workload),
                         at_scale=costs, failures=failures)


def simulate(program: CapturedProgram | str | os.PathLike[str], *, fabric: Any = "ideal", device: Any = "h100_sxm",
             collective: Any = "best", compute: Any = None, check_memory: bool = True,
             contention: bool = True) -> ProgramResult:
    """Price one captured step on `fabric` (see the module docstring); `program` may be a saved capture.
    `contention`: collectives in flight at the same time share the fabric (``network.contention``).
    Chakra ETs of an analytic model (`ddlsim.chakra.load_chakra`) price their own iteration graph:
    their compute keeps its exported times, so `compute` and `check_memory` do not apply."""
    device_spec = build("device", device)
    own = getattr(program, "simulate_on", None)  # Chakra ETs of an analytic model price their own graph
    if own is not None:
        return own(build("fabric", fabric), build("collective", collective), device_spec,
                   TrainingSettings(contention=contention))
    if not isinstance(program, CapturedProgram):
        if not isinstance(program, (str, os.PathLike)):
            raise ConfigError("program", type(program).__name__,
                              "must be a CapturedProgram (ddlsim.capture) or the path of a saved capture")
        program = CapturedProgram.load(program)
    return simulate_program(program, build("fabric", fabric), build("collective", collective), device_spec,
                            build_compute(compute, device_spec), TrainingSettings(contention=contention),
                            check_memory=check_memory)
