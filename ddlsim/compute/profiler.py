"""Measure one equivalent shard: forward, recompute, backward and optimizer time under torch.profiler.

The method follows RAMP section 7.3: warm up, then run N training iterations of the one-rank
shard (mixed precision under autocast on GPU, the shard's own activation checkpointing) and read
the device time of every phase from the profiler trace. One extra, unprofiled iteration runs
under `FlopCounterMode` and a byte counter to count each phase's FLOPs and bytes, so the row
can report achieved FLOP/s and be priced by the roofline.

On a GPU every phase ends with a synchronisation (and the recompute is bracketed by two), so
each kernel runs inside the host window of the phase that launched it; the phase's device time
is the union of its kernels' intervals. On a CPU the device is the CPU: a phase's time is the
union of its top-level operators' intervals (aten, fbgemm, ...), which leaves out Python overhead.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import time
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import torch
from torch.autograd import DeviceType
from torch.profiler import ProfilerActivity, profile, record_function

from ddlsim.compute.counting import WorkCount, count_work
from ddlsim.compute.identity import DeviceIdentity
from ddlsim.compute.profile_settings import DEFAULT_SETTINGS, ProfileSettings
from ddlsim.compute.recompute import on_recompute
from ddlsim.compute.timeline import Activity, Window, attribute, summarise
from ddlsim.core import units
from ddlsim.core.errors import ConfigError, InfeasibleError
from ddlsim.core.types import Phase, Precision
from ddlsim.core.work import ShardSignature

WINDOW_PREFIX = "ddlsim::"
PHASE_ORDER = (Phase.FORWARD, Phase.RECOMPUTE, Phase.BACKWARD, Phase.OPTIMIZER)
_AUTOCAST = {Precision.FP16: torch.float16, Precision.BF16: torch.bfloat16}


@dataclass(frozen=True)
class PhaseMeasurement:
    phase: Phase
    time_s: float         # the settings' statistic of the busy time
    time_median_s: float
    time_min_s: float
    time_mean_s: float
    time_std_s: float
    wall_time_s: float
    kernels: int
    counted_flop: float
    counted_bytes: float

    @property
    def achieved_flop_per_s(self) -> float:
        return self.counted_flop / self.time_s if self.time_s > 0 else 0.0


@dataclass(frozen=True)
class ShardMeasurement:
    device: DeviceIdentity
    phases: tuple[PhaseMeasurement, ...]
    iterations: int
    warmup: int
    statistic: str
    run_precision: str
    elapsed_s: float

    def phase(self, phase: Phase | str) -> PhaseMeasurement:
        for measurement in self.phases:
            if measurement.phase == Phase(phase):
                return measurement
        raise KeyError(phase)


def run_precision(precision: Precision, torch_device: str) -> str:
    """What actually runs: autocast to fp16/bf16 on GPU; fp32 on CPU (documented limitation)."""
    if torch.device(torch_device).type != "cuda":
        return "fp32"
    if precision is Precision.FP8:
        raise ConfigError("precision", precision.value, "fp8 cannot be profiled with torch autocast; use bf16")
    return "tf32" if precision is Precision.TF32 else precision.value


class _Step:
    """One training iteration of a shard, with a hook around each phase."""

    def __init__(self, shard: Any, torch_device: str) -> None:
        self.shard = shard
        self.device = torch.device(torch_device)
        self.cuda = self.device.type == "cuda"
        self.precision = Precision(shard.precision)
        self.ran = run_precision(self.precision, torch_device)
        self.optimizer = shard.make_optimizer(shard.module.parameters())
        use_scaler = self.cuda and self.ran == "fp16"
        self.scaler = torch.amp.GradScaler("cuda") if use_scaler else None

    def sync(self) -> None:
        if self.cuda:
            torch.cuda.synchronize(self.device)

    def autocast(self) -> contextlib.AbstractContextManager[Any]:
        if self.cuda and self.precision in _AUTOCAST:
            return torch.autocast("cuda", dtype=_AUTOCAST[self.precision])
        return contextlib.nullcontext()

    @contextlib.contextmanager
    def matmul_precision(self) -> Iterator[None]:
        """TF32 tensor-core matmuls exactly when the signature says tf32 (restored afterwards)."""
        if not self.cuda:
            yield
            return
        previous = torch.backends.cuda.matmul.allow_tf32
        torch.backends.cuda.matmul.allow_tf32 = self.precision is Precision.TF32
        try:
            yield
        finally:
            torch.backends.cuda.matmul.allow_tf32 = previous

    def run(self, around: Callable[[Phase], contextlib.AbstractContextManager[Any]]) -> None:
        with self.matmul_precision():
            self._run(around)

    def _run(self, around: Callable[[Phase], contextlib.AbstractContextManager[Any]]) -> None:
        batch = self.shard.make_batch()
        self.sync()
        with around(Phase.FORWARD):
            with self.autocast():
                loss = self.shard.loss(self.shard.module(*batch))
            self.sync()
        with around(Phase.BACKWARD):
            (self.scaler.scale(loss) if self.scaler else loss).backward()
            self.sync()
        with around(Phase.OPTIMIZER):
            if self.scaler:
                self.scaler.step(self.optimizer)
                self.scaler.update()
            else:
                self.optimizer.step()
            self.optimizer.zero_grad(set_to_none=True)
            self.sync()


def _count_phases(step: _Step) -> dict[Phase, WorkCount]:
    counts: dict[Phase, WorkCount] = {}
    recomputes: list[WorkCount] = []

    def counted_recompute(run: Callable[[], Any]) -> Any:
        with count_work() as count:  # filled in on exit, also when torch stops the recompute early
            recomputes.append(count)
            return run()

    @contextlib.contextmanager
    def around(phase: Phase) -> Iterator[None]:
        with count_work() as count:
            yield
        counts[phase] = count

    with on_recompute(counted_recompute):
        step.run(around)
    if recomputes:
        counts[Phase.RECOMPUTE] = WorkCount(sum(c.flop for c in recomputes), sum(c.bytes for c in recomputes))
        backward = counts[Phase.BACKWARD]
        counts[Phase.BACKWARD] = WorkCount(backward.flop - counts[Phase.RECOMPUTE].flop,
                                           backward.bytes - counts[Phase.RECOMPUTE].bytes)
    return counts


def _windows_and_activities(events: Any, cuda: bool) -> tuple[list[Window], list[Activity]]:
    windows, activities = [], []
    for event in events:
        name = event.name
        if name.startswith(WINDOW_PREFIX):
            phase, _, iteration = name[len(WINDOW_PREFIX):].partition("#")
            if event.device_type == DeviceType.CPU and iteration.isdigit():
                windows.append(Window(phase, int(iteration), event.time_range.start, event.time_range.end))
            continue
        if cuda:
            if event.device_type == DeviceType.CUDA and not getattr(event, "is_user_annotation", False):
                activities.append(Activity(event.time_range.start, event.time_range.end))
        elif _is_operator(event) and not _has_operator_parent(event):
            activities.append(Activity(event.time_range.start, event.time_range.end))
    return windows, activities


# Namespaced CPU events that are not operators: autograd nodes and engine frames, our windows.
_NOT_OPERATORS = ("autograd::", "torch::autograd::", WINDOW_PREFIX)


def _is_operator(event: Any) -> bool:
    """A CPU operator of any library (aten::, fbgemm::, c10d::, ...), not an annotation."""
    return (event.device_type == DeviceType.CPU and not getattr(event, "is_user_annotation", False)
            and "::" in event.name
            and not event.name.startswith(_NOT_OPERATORS))


def _has_operator_parent(event: Any) -> bool:
    parent = event.cpu_parent
    while parent is not None:
        if _is_operator(parent):
            return True
        parent = parent.cpu_parent
    return False


def profile_shard(shard: Any, identity: DeviceIdentity, settings: ProfileSettings = DEFAULT_SETTINGS,
                  progress: Callable[[int], None] | None = None) -> ShardMeasurement:
    """Warm up, count work once, then profile `settings.iterations` iterations of `shard`.

    `shard` follows the `EquivalentShard` contract (module, make_batch, loss, make_optimizer,
    precision, checkpointing) and must already live on `identity.torch_device`. `progress` is
    called with 1 after each profiled iteration.
    """
    started = time.perf_counter()
    step = _Step(shard, identity.torch_device)
    shard.module.train()
    for _ in range(settings.warmup):
        step.run(lambda phase: contextlib.nullcontext())
    counts = _count_phases(step)

    iteration = 0

    def window(phase: Phase | str) -> contextlib.AbstractContextManager[Any]:
        return record_function(f"{WINDOW_PREFIX}{Phase(phase).value}#{iteration}")

    def labelled_recompute(run: Callable[[], Any]) -> Any:
        step.sync()  # so that backward kernels still running are not taken for recompute
        with window(Phase.RECOMPUTE):
            try:
                return run()
            finally:
                step.sync()

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if step.cuda else [])
    with on_recompute(labelled_recompute) as hook, profile(activities=activities) as prof:
        for iteration in range(settings.iterations):  # noqa: B007 (read by window())
            step.run(window)
            if progress:
                progress(1)
    windows, device_activities = _windows_and_activities(prof.events(), step.cuda)
    summaries = summarise(attribute(windows, device_activities))
    if shard.checkpointing and Phase.RECOMPUTE.value not in summaries:
        reason = "" if hook.supported else " (this torch hides the checkpoint recompute from ddlsim)"
        warnings.warn(f"the shard says it checkpoints activations, but no recompute was observed{reason}; "
                      "backward includes any recompute", stacklevel=2)
    phases = []
    for phase in PHASE_ORDER:
        summary = summaries.get(phase.value)
        if summary is None:
            continue
        count = counts.get(phase, WorkCount())
        time_s = summary.time_min_s if settings.statistic == "min" else summary.time_median_s
        phases.append(PhaseMeasurement(phase=phase, time_s=time_s, time_median_s=summary.time_median_s,
                                       time_min_s=summary.time_min_s, time_mean_s=summary.time_mean_s,
                                       time_std_s=summary.time_std_s, wall_time_s=summary.wall_time_s,
                                       kernels=summary.kernels, counted_flop=count.flop,
                                       counted_bytes=count.bytes))
    return ShardMeasurement(device=identity, phases=tuple(phases), iterations=settings.iterations,
                            warmup=settings.warmup, statistic=settings.statistic, run_precision=step.ran,
                            elapsed_s=time.perf_counter() - started)


# --- Will the shard fit? (checked before any profiling, so a too-large shard is refused, not run) ---

ADAM_STATE_COPIES = 4  # weights, gradients and Adam's two moments, each the size of the weights
MEMORY_HEADROOM = 0.9  # leave a tenth of the free memory to the allocator and everything else


def available_memory_bytes(torch_device: str) -> int | None:
    """Free memory of the device: CUDA's free bytes, or the host's available RAM for the CPU."""
    device = torch.device(torch_device)
    if device.type == "cuda":
        return int(torch.cuda.mem_get_info(device)[0])
    try:
        with open("/proc/meminfo", encoding="ascii") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * units.KIBI
    except OSError:
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


@dataclass(frozen=True)
class MemoryEstimate:
    """Bytes one training step of a shard needs: model and optimizer state, activations, the batch."""

    state_bytes: int
    activation_bytes: int
    batch_bytes: int

    @property
    def total_bytes(self) -> int:
        return self.state_bytes + self.activation_bytes + self.batch_bytes


def estimate_training_memory(signature: ShardSignature, build: Callable[[ShardSignature, str], Any],
                             torch_device: str) -> MemoryEstimate:
    """Estimate a training step's peak memory by running the shard's forward on the meta device.

    The state is `ADAM_STATE_COPIES` times the parameter bytes. The activations are the tensors
    autograd saves in a forward pass *without* activation checkpointing: a checkpointed shard
    recomputes its layer during backward and holds them then. On a GPU under fp16/bf16 autocast
    the saved tensors are half as wide as the fp32 meta run's.
    """
    full = dataclasses.replace(signature, checkpointing=False)
    shard = build(full, "meta")
    state = ADAM_STATE_COPIES * sum(p.numel() * p.element_size() for p in shard.module.parameters())
    saved: list[int] = []

    def pack(tensor: torch.Tensor) -> torch.Tensor:
        saved.append(tensor.numel() * tensor.element_size())
        return tensor

    batch = shard.make_batch()
    batch_bytes = sum(item.numel() * item.element_size() for item in batch if isinstance(item, torch.Tensor))
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda tensor: tensor):
        shard.loss(shard.module(*batch))
    activations = sum(saved)
    if torch.device(torch_device).type == "cuda" and signature.precision in _AUTOCAST:
        activations //= 2
    return MemoryEstimate(state, activations, batch_bytes)


def check_fits(signature: ShardSignature, build: Callable[[ShardSignature, str], Any], torch_device: str,
               device_name: str) -> None:
    """Raise `InfeasibleError`, with the estimate and a local batch that would fit, if the shard does not fit."""
    available = available_memory_bytes(torch_device)
    if available is None:
        return
    try:
        estimate = estimate_training_memory(signature, build, torch_device)
    except (RuntimeError, NotImplementedError, TypeError):  # an operator without a meta kernel: cannot tell
        return
    usable = int(available * MEMORY_HEADROOM)
    if estimate.total_bytes <= usable:
        return
    show = units.format_size_bytes
    per_sequence = (estimate.activation_bytes + estimate.batch_bytes) / signature.local_batch
    fitting = int((usable - estimate.state_bytes) // per_sequence) if per_sequence > 0 else 0
    advice = (f"profile it at a local batch that fits, e.g. task.local_batches=[{fitting}]" if fitting >= 1 else
              "not even one sample fits; profile a smaller shape (task.signatures)")
    raise InfeasibleError(
        f"shard {signature.key()} needs about {show(estimate.total_bytes)} to train ({show(estimate.state_bytes)} "
        f"of weights, gradients and Adam state, {show(estimate.activation_bytes + estimate.batch_bytes)} of "
        f"activations and batch at local batch {signature.local_batch}) but {device_name} has "
        f"{show(available)} available; {advice}")
