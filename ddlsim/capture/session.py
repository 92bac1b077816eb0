"""One rank of the user's program on a fake process group with fake tensors.

`run_rank(build, layout, rank, warmup)` sets up a ``fake``-backend process group of
``layout.world_size`` ranks as `rank`, builds the device mesh (outside fake mode: `DeviceMesh`
reads its coordinates with ``nonzero``, which fake tensors refuse), then calls ``build(mesh)``
and the ``step()`` it returns inside `FakeTensorMode` under the recorder. Parameters created in
``build`` are fake (no memory), while ``parallelize_module`` and ``fully_shard`` still work,
because the recorder runs ops on real tensors (the mesh's) outside fake mode. The process group
is destroyed on success and on every error.
"""

from __future__ import annotations

import contextlib
import math
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import torch
import torch.distributed as dist
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.tensor._sharding_prop import ShardingPropagator

from ddlsim.capture.attribution import Attribution
from ddlsim.capture.compiled import compile_runs_eager
from ddlsim.capture.ddp import ddp_on_fake_process_group
from ddlsim.capture.devices import cuda_on_fake_device
from ddlsim.capture.exits import program_exits
from ddlsim.capture.failures import build_error, torch_tracebacks_quiet
from ddlsim.capture.fsdp import lazy_fsdp_chunks
from ddlsim.capture.gpu_paths import cuda_code_paths
from ddlsim.capture.hf_paths import unpacked_sequences
from ddlsim.capture.initialisers import initialisers_skip_fake_tensors
from ddlsim.capture.pipelining import stage_votes_locally
from ddlsim.capture.recorder import Recorder
from ddlsim.capture.records import OpRecord
from ddlsim.capture.replicate import Replay, Replicator, replicate_chunks
from ddlsim.capture.streams import Timeline, patched_runtime
from ddlsim.core.errors import ConfigError, DdlsimError, debug_cause

SHAPE_INFERENCE = "_propagate_tensor_meta_non_cached"
Build = Callable[[Any], Callable[[], Any]]


@dataclass(frozen=True)
class MeshLayout:
    shape: tuple[int, ...]
    dim_names: tuple[str, ...]

    def __post_init__(self) -> None:
        if not self.shape or any(not isinstance(size, int) or size < 1 for size in self.shape):
            raise ConfigError("mesh_shape", list(self.shape), "must be a non-empty list of integers >= 1")
        if len(self.dim_names) != len(self.shape) or len(set(self.dim_names)) != len(self.dim_names):
            raise ConfigError("mesh_dim_names", list(self.dim_names),
                              f"must name each of the {len(self.shape)} mesh dimensions once")

    @property
    def world_size(self) -> int:
        return math.prod(self.shape)

    def coordinate(self, rank: int) -> tuple[int, ...]:
        coordinate = []
        for size in reversed(self.shape):
            rank, index = divmod(rank, size)
            coordinate.append(index)
        return tuple(reversed(coordinate))


@contextlib.contextmanager
def fake_process_group(world_size: int, rank: int) -> Iterator[None]:
    """The default process group as `rank` of `world_size` on the ``fake`` backend, torn down after."""
    from torch.testing._internal.distributed.fake_pg import FakeStore

    if dist.is_initialized():
        raise ConfigError("capture", "process group", "a process group is already initialised; ddlsim.capture "
                                                      "runs its own fake one, so call it outside any other")
    hook = sys.excepthook  # torch prefixes tracebacks with the rank; do not keep that after the capture
    dist.init_process_group("fake", store=FakeStore(), rank=rank, world_size=world_size)
    try:
        yield
    finally:
        if dist.is_initialized():
            dist.destroy_process_group()
        sys.excepthook = hook


def _optimizer_classes() -> list[type]:
    found, pending = [], [torch.optim.Optimizer]
    while pending:
        cls = pending.pop()
        pending.extend(cls.__subclasses__())
        if "_init_group" in cls.__dict__:
            found.append(cls)
    return found


@contextlib.contextmanager
def optimizer_state_unrecorded(recorder: Recorder) -> Iterator[None]:
    """Optimizers create their state lazily, in the first step's ``_init_group``: that is
    initialisation, not a training step, so it is not recorded (with or without a warm-up)."""
    with contextlib.ExitStack() as stack:
        for cls in _optimizer_classes():
            stack.enter_context(recorder.suspended_in(cls, "_init_group"))
        yield


def _record_step(step: Callable[[], Any], warmup: int, timeline: Timeline, recorder: Recorder,
                 replicator: Replicator | None, attribution: Attribution) -> None:
    """`warmup` unrecorded steps, then the recorded one."""
    with attribution.tracking(), unpacked_sequences(), program_exits("step", step):
        for _ in range(warmup):
            step()
        timeline.reset()
        recorder.records.clear()
        recorder.replayed = 0
        if replicator is not None:
            replicator.reset()
        attribution.region = "forward"
        recorder.recording = True
        step()
    recorder.recording = False


def run_rank(build: Build, layout: MeshLayout, rank: int, warmup: int = 0,
             replicate: bool = False) -> tuple[list[OpRecord], list[Replay]]:
    """The records of one step of `build`'s program as `rank` (see the module docstring), and the
    replayed pipeline chunks when `replicate` is set (`replicate.py`)."""
    with fake_process_group(layout.world_size, rank):
        mesh = init_device_mesh("cpu", layout.shape, mesh_dim_names=layout.dim_names)
        timeline, attribution = Timeline(), Attribution()
        fake_mode = FakeTensorMode(allow_non_fake_inputs=True)
        recorder = Recorder(timeline, layout.world_size, attribution, fake_mode)
        replicator = Replicator(recorder, attribution) if replicate else None
        try:
            with patched_runtime(timeline), recorder.suspended_in(ShardingPropagator, SHAPE_INFERENCE, False), \
                    optimizer_state_unrecorded(recorder), stage_votes_locally(), ddp_on_fake_process_group(), \
                    lazy_fsdp_chunks(), cuda_code_paths(), replicate_chunks(replicator), torch_tracebacks_quiet(), \
                    initialisers_skip_fake_tensors(), compile_runs_eager(), cuda_on_fake_device(), fake_mode, recorder:
                with program_exits("build", build):
                    step = build(mesh)
                if not callable(step):
                    raise ConfigError("build", type(step).__name__, "must return step(), a function that runs one "
                                                                    "training iteration")
                _record_step(step, warmup, timeline, recorder, replicator, attribution)
        except DdlsimError:
            raise
        except Exception as error:
            if recorder.failure is not None:
                raise recorder.failure from debug_cause(recorder.failure.cause)
            raise build_error(error, recorder.failed_module).keep_cause(error) from debug_cause(error)
        finally:
            torch.distributed.device_mesh._mesh_resources.mesh_stack.clear()
        return recorder.records, replicator.replays if replicator is not None else []
