"""`model=program`: the user's own PyTorch program, captured, as a model of the ``model`` group.

    ddlsim model=program model.entry=examples.ddp_cnn:build model.mesh_shape=[16] model.mesh_dim_names=[dp]
    ddlsim model=program model.capture=outputs/llama.parquet fabric=ramp,superpod -m

Either ``entry`` (``package.module:function``, called as ``build(mesh, **options)``; the
current directory is importable) with ``mesh_shape`` and ``mesh_dim_names``, or ``capture``, a
file written by `CapturedProgram.save`, which is used instead of the entry when given. The
defaults capture ``examples/ddp_cnn.py`` on 8 ranks (the checkout's copy from its root, else
the copy shipped as ``ddlsim.examples``). Building the model only checks the settings; the
capture runs when the first run needs it and is reused by every later run of the process
(`cache.CAPTURES`). The program decides its own parallelism, so the ``parallel`` group must stay
at its defaults. ``global_batch`` and ``seq_len`` declare the
step's batch for the throughput columns (0: from the program, `throughput.py`);
``check_memory=false`` prices a capture whose peak live tensor bytes exceed the device memory
instead of refusing it. This module does not import torch; the capture room is imported when a
capture runs.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, fields
from functools import partial
from typing import Any

from ddlsim.capture.cache import CAPTURES, file_key
from ddlsim.core.errors import ConfigError
from ddlsim.core.registry import MODELS


@dataclass
class ProgramConfig:
    """A captured PyTorch program: `entry` and the mesh, or a saved `capture` file."""

    name: str = "program"
    entry: str = "examples.ddp_cnn:build"
    mesh_shape: list[int] = field(default_factory=lambda: [8])
    mesh_dim_names: list[str] = field(default_factory=lambda: ["dp"])
    options: dict[str, Any] = field(default_factory=dict)
    capture: str = ""
    save: str = ""
    warmup: int = 0
    pipeline_dim: str = "pp"
    expert_load: list[float] = field(default_factory=list)
    global_batch: int = 0
    seq_len: int = 0
    check_memory: bool = True
    replicate: bool = False


def _freeze(value: Any) -> Any:
    if isinstance(value, dict):
        return tuple(sorted((str(key), _freeze(item)) for key, item in value.items()))
    if isinstance(value, (list, tuple)):
        return tuple(_freeze(item) for item in value)
    return value


def _thaw(value: Any) -> Any:
    if isinstance(value, tuple) and all(isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], str)
                                        for item in value) and value:
        return {key: _thaw(item) for key, item in value}
    if isinstance(value, tuple):
        return [_thaw(item) for item in value]
    return value


@MODELS.register("program", ProgramConfig)
@dataclass(frozen=True)
class ProgramModel:
    """Your own PyTorch program (build(mesh) -> step), captured on a fake process group."""

    entry: str = ""
    mesh_shape: tuple[int, ...] = ()
    mesh_dim_names: tuple[str, ...] = ()
    options: tuple = ()
    capture_file: tuple[str, float] | None = None
    save: str = ""
    warmup: int = 0
    pipeline_dim: str = "pp"
    expert_load: tuple[float, ...] = ()
    name: str = "program"
    global_batch: int = 0
    seq_len: int = 0
    check_memory: bool = True
    replicate: bool = False

    @classmethod
    def from_config(cls, config: ProgramConfig) -> ProgramModel:
        if not config.entry and not config.capture:
            raise ConfigError("entry", None, "give model.entry (package.module:function) or model.capture (a saved "
                                             "capture file)")
        if config.capture and not os.path.isfile(config.capture):
            raise ConfigError("capture", config.capture, "no such file; write one with CapturedProgram.save(path)")
        if not config.capture:
            if ":" not in config.entry:
                raise ConfigError("entry", config.entry, "must be 'package.module:function'")
            if not config.mesh_shape or any(int(size) < 1 for size in config.mesh_shape):
                raise ConfigError("mesh_shape", list(config.mesh_shape), "must be a non-empty list of sizes >= 1, "
                                                                       "e.g. [8, 8]")
            if len(config.mesh_dim_names) != len(config.mesh_shape):
                raise ConfigError("mesh_dim_names", list(config.mesh_dim_names),
                                  f"must name each of the {len(config.mesh_shape)} mesh dimensions, e.g. [dp, tp]")
        if config.warmup < 0:
            raise ConfigError("warmup", config.warmup, "must be >= 0")
        for key in ("global_batch", "seq_len"):
            if getattr(config, key) < 0:
                raise ConfigError(key, getattr(config, key), "must be >= 0 (0: from the program)")
        if config.capture:
            return cls(capture_file=file_key(config.capture), save=config.save, name=config.name,
                       check_memory=config.check_memory)
        return cls(entry=config.entry, mesh_shape=tuple(int(size) for size in config.mesh_shape),
                   mesh_dim_names=tuple(str(name) for name in config.mesh_dim_names),
                   options=_freeze(dict(config.options)), save=config.save,
                   warmup=config.warmup, pipeline_dim=config.pipeline_dim,
                   expert_load=tuple(float(weight) for weight in config.expert_load), name=config.name,
                   global_batch=config.global_batch, seq_len=config.seq_len, check_memory=config.check_memory,
                   replicate=bool(config.replicate))

    def definition(self) -> tuple:
        """What identifies the capture (the cache key): everything but where to save it."""
        return (self.entry, self.mesh_shape, self.mesh_dim_names, self.options, self.capture_file, self.warmup,
                self.pipeline_dim, self.expert_load, self.name, self.global_batch, self.seq_len, self.replicate)

    def program(self) -> Any:
        """The captured program (captured, or loaded, once per process); saved if `save` is set."""
        program = CAPTURES.get(self.definition(), self._capture)
        if self.save:
            program.save(self.save)
        return program

    def _capture(self) -> Any:
        from ddlsim.capture.api import capture, resolve_entry
        from ddlsim.capture.program import CapturedProgram

        if self.capture_file is not None:
            return CapturedProgram.load(self.capture_file[0])
        try:
            build = resolve_entry(self.entry)
        except ConfigError as error:
            raise error.under("model") from None
        options = _thaw(self.options) or {}
        module, _, function = self.entry.partition(":")
        program = capture(partial(build, **options) if options else build, self.mesh_shape, self.mesh_dim_names,
                          name=module.rpartition(".")[2] if function == "build" else function, warmup=self.warmup,
                          pipeline_dim=self.pipeline_dim or None,
                          expert_load=self.expert_load or None, global_batch=self.global_batch or None,
                          seq_len=self.seq_len or None, replicate=self.replicate)
        return program

    def train_on_fabric(self, parallel: Any, device: Any, compute: Any, fabric: Any, algorithm: Any,
                        settings: Any) -> Any:
        """Price the captured step on `fabric` (the train task's hook for models with their own graph)."""
        from ddlsim.capture.simulation import simulate_program

        _check_parallel(parallel)
        return simulate_program(self.program(), fabric, algorithm, device, compute, settings,
                                check_memory=self.check_memory)

    def build_workload(self, parallel: Any, memory_bytes: int) -> Any:
        """The capture's workload record (its graph comes from the program: see `train_on_fabric`)."""
        from ddlsim.capture.simulation import check_memory_fits, program_workload

        _check_parallel(parallel)
        program = self.program()
        if self.check_memory:
            check_memory_fits(program, memory_bytes)
        return program_workload(program)


def _check_parallel(parallel: Any) -> None:
    from ddlsim.workload.parallel import ParallelConfig

    defaults = ParallelConfig()
    for item in fields(ParallelConfig):
        if item.name in ("tensor", "data", "pipeline", "micro_batch", "sequence_parallel") and \
                getattr(parallel, item.name) != getattr(defaults, item.name):
            raise ConfigError(f"parallel.{item.name}", getattr(parallel, item.name),
                              "model=program takes its parallelism from the program and model.mesh_shape; "
                              "leave the parallel group at its defaults")
