"""`ddlsim.capture(build, mesh_shape, mesh_dim_names, **options) -> CapturedProgram`.

``build(mesh)`` is the user's function: it builds the model, applies its parallelism with
standard PyTorch APIs (``fully_shard``, ``parallelize_module``, DDP, ``torch.distributed.pipelining``)
on the `DeviceMesh` it is given, and returns ``step()``, one training iteration (forward,
backward, optimizer). ddlsim runs it on a fake process group of ``prod(mesh_shape)`` ranks with
fake tensors and records every op (`session.py`).

Which ranks are captured: ``ranks`` if given; otherwise, when ``pipeline_dim`` names a mesh
dimension, one rank per pipeline stage (coordinate 0 in every other dimension), else rank 0.
Ranks that differ only in their data-parallel or tensor-parallel coordinate run the same
program, so one rank per stage is the whole iteration.

``replicate=True`` records each distinct forward and backward chunk of a
`torch.distributed.pipelining` stage once and replays the repeats (`replicate.py`): the schedule
still runs every micro-batch, and the iteration graph is the one a full record gives.
"""

from __future__ import annotations

import importlib
import importlib.util
import operator
import os
import sys
import time
import zlib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from ddlsim.capture.exits import ENTRY_MODULE_PREFIX, describe_function, import_failure
from ddlsim.capture.moe import expert_load_context
from ddlsim.capture.program import CapturedProgram, records_frame, replays_frame
from ddlsim.capture.session import MeshLayout, run_rank
from ddlsim.capture.throughput import check_declared, declarations
from ddlsim.core.errors import ConfigError, debug_cause


def resolve_entry(entry: str) -> Callable[..., Any]:
    """``pkg.module:function`` or ``path/to/file.py:function`` -> the function (the CLI's
    ``model.entry``). The current directory is importable, as it is for ``python -m``; outside a
    checkout, ``examples.<name>`` is the copy shipped in the package (``ddlsim.examples``)."""
    module_name, _, attribute = entry.rpartition(":")
    if not module_name or not attribute:
        raise ConfigError("entry", entry, "must be 'package.module:function' or 'path/to/file.py:function', "
                          "e.g. examples.ddp_cnn:build")
    module = _load_file(entry, module_name) if module_name.endswith(".py") else _import(entry, module_name)
    function = getattr(module, attribute, None)
    if not callable(function):
        raise ConfigError("entry", entry, f"{module_name} has no function {attribute!r}")
    return function


def _import(entry: str, module_name: str) -> Any:
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError as error:
        if module_name.startswith("examples.") and error.name == "examples":
            return _import(entry, f"ddlsim.{module_name}")
        raise ConfigError("entry", entry, f"cannot import {module_name}: {error}") from error
    except ImportError as error:
        raise ConfigError("entry", entry, f"cannot import {module_name}: {error}") from error
    except (Exception, SystemExit) as error:  # a syntax error, a NameError at module level, sys.exit()
        raise import_failure(entry, module_name, error) from debug_cause(error)


def _load_file(entry: str, path_text: str) -> Any:
    path = Path(path_text).expanduser().resolve()
    if not path.is_file():
        raise ConfigError("entry", entry, f"no such file {path}")
    name = f"{ENTRY_MODULE_PREFIX}{path.stem}_{zlib.crc32(str(path).encode()):08x}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses and pickling look the module up by name
    try:
        spec.loader.exec_module(module)
    except ImportError as error:
        sys.modules.pop(name, None)
        raise ConfigError("entry", entry, f"cannot import {path}: {error}") from error
    except (Exception, SystemExit) as error:  # a syntax error, a NameError at module level, sys.exit()
        sys.modules.pop(name, None)
        raise import_failure(entry, str(path), error) from debug_cause(error)
    return module


def default_ranks(layout: MeshLayout, pipeline_dim: str | None) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(ranks to capture, their pipeline stage): one rank per stage, or rank 0."""
    if not pipeline_dim or pipeline_dim not in layout.dim_names:
        return (0,), (0,)
    dim = layout.dim_names.index(pipeline_dim)
    inner = 1
    for size in layout.shape[dim + 1:]:
        inner *= size
    stages = tuple(range(layout.shape[dim]))
    return tuple(stage * inner for stage in stages), stages


def _items(values: Any, key: str) -> tuple[Any, ...]:
    if isinstance(values, (str, bytes)) or not isinstance(values, Sequence):
        raise ConfigError(key, values, "must be a list")
    return tuple(values)


def _integers(values: Any, key: str) -> tuple[int, ...]:
    """`values` as a tuple of ints (numpy integers too); `ConfigError` naming `key` otherwise."""
    items = _items(values, key)
    try:
        return tuple(operator.index(item) for item in items)
    except TypeError:
        raise ConfigError(key, list(items), "must be a list of integers") from None


def capture(build: Callable[[Any], Callable[[], Any]] | str, mesh_shape: Sequence[int], mesh_dim_names: Sequence[str],
            *, name: str | None = None, ranks: Sequence[int] | None = None, pipeline_dim: str | None = "pp",
            warmup: int = 0, expert_load: Sequence[float] | None = None, global_batch: int | None = None,
            seq_len: int | None = None, replicate: bool = False) -> CapturedProgram:
    """Run `build`'s training step on a fake process group and record it (module docstring).

    `warmup` steps run unrecorded before the recorded one, for programs whose first step differs
    from the next ones. Without them the first step is recorded, except the optimizers' lazy
    state creation (never recorded); FSDP2, DTensor, DDP and pipelining programs record the same
    ops in their first and later steps under a capture. `expert_load`
    weights the split sizes `ddlsim.capture.splits` hands to data-dependent MoE dispatch
    (uniform when None). `global_batch` (samples per step over all ranks) and `seq_len` declare
    the step's batch for the throughput columns; without them the build function's
    ``ddlsim.capture.batch(...)`` or the step's token inputs give it (`throughput.py`).
    `replicate` replays repeated pipeline chunks instead of running them (module docstring;
    docs/capture.md, "Replicated captures").
    """
    entry = build if isinstance(build, str) else describe_function(build)
    function = resolve_entry(build) if isinstance(build, str) else build
    if not callable(function):
        raise ConfigError("build", type(build).__name__, "must be a function build(mesh) -> step")
    layout = MeshLayout(_integers(mesh_shape, "mesh_shape"), tuple(str(dim) for dim in _items(mesh_dim_names,
                                                                                              "mesh_dim_names")))
    if not isinstance(warmup, int) or warmup < 0:
        raise ConfigError("warmup", warmup, "must be an integer >= 0")
    check_declared(global_batch, seq_len)
    if not isinstance(replicate, bool):
        raise ConfigError("replicate", replicate, "must be true or false")
    if ranks is None:
        chosen, stages = default_ranks(layout, pipeline_dim)
    else:
        chosen = _integers(ranks, "ranks")
        bad = [rank for rank in chosen if not 0 <= rank < layout.world_size]
        if bad or not chosen:
            raise ConfigError("ranks", list(chosen), f"must be ranks in [0, {layout.world_size})")
        stages = tuple(range(len(chosen)))
    start = time.perf_counter()
    frames, replays = [], []
    with expert_load_context(expert_load), declarations() as declared:
        for rank in chosen:
            records, replayed = run_rank(function, layout, rank, warmup, replicate)
            frames.append(records_frame(rank, records))
            replays.append(replays_frame(rank, replayed))
    options = {"entry": entry, "warmup": warmup, "pipeline_dim": pipeline_dim,
               "expert_load": list(expert_load) if expert_load is not None else None,
               "global_batch": global_batch or declared.get("global_batch") or None,
               "seq_len": seq_len or declared.get("seq_len") or None, "replicate": replicate}
    return CapturedProgram(name=name or entry.rpartition(":")[2], mesh_shape=layout.shape,
                           mesh_dim_names=layout.dim_names, ranks=chosen, stages=stages,
                           events=pd.concat(frames, ignore_index=True), options=options,
                           capture_time_s=time.perf_counter() - start,
                           replays=pd.concat(replays, ignore_index=True))
