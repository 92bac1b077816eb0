"""What one captured step trains on, and how much of it is model work: batch, tokens, model FLOPs.

The batch of a step, first found of:

1. declared to `ddlsim.capture` (``global_batch=``, ``seq_len=``; ``model.global_batch``,
   ``model.seq_len`` on the command line);
2. declared by the build function: ``ddlsim.capture.batch(global_batch, seq_len)`` called inside
   ``build`` (a no-op outside a capture);
3. inferred from the step's token inputs: the index tensors of the first module that calls
   ``aten.embedding`` in forward, on the captured rank that calls it most (the first pipeline
   stage), summed over its calls (micro-batches). Their elements are the rank's tokens; the
   sequence length is the attention kernels' key length where the step runs attention kernels,
   else the longest dimension of the index tensor; samples are tokens / sequence length. Ranks
   that differ only in a mesh dimension named ``tp`` or ``pp`` see the same samples; ``cp`` and
   ``sp`` dimensions split each sequence (seq_len x their size); every other dimension (``dp``,
   ``fsdp``, ``ep``, ...) holds different samples (global batch = samples x their sizes).

Without any of these (a model without token embeddings), the batch is unknown: ``global_batch``
is 1 as before and the throughput columns are NaN.

Model FLOPs of a step (for ``mfu``): the recorded FLOPs of forward and backward (not
recomputation, not the optimizer) on every rank, each captured rank standing for the ranks of
its pipeline stage. Recorded FLOPs are those of GEMMs, grouped GEMMs, attention kernels and
convolutions (`shapes.py`), attention as the kernels count it: a causal attention counts half of
the full s^2 work (some papers' MFU counts the full s^2).
"""

from __future__ import annotations

import contextlib
import json
import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from ddlsim.capture.pricing import kernel_class_of
from ddlsim.core.errors import ConfigError

_DECLARED: list[dict[str, int]] = []
SAME_SAMPLES_DIMS = frozenset({"tp", "pp"})
SEQUENCE_DIMS = frozenset({"cp", "sp"})
MODEL_PHASES = ("forward", "backward")


@dataclass(frozen=True)
class StepBatch:
    """The samples and tokens of one step; `source` says where they came from (module docstring)."""

    global_batch: int = 1
    seq_len: int = 0
    source: str = "unknown"

    @property
    def tokens(self) -> int:
        return self.global_batch * self.seq_len

    @property
    def known(self) -> bool:
        return self.source != "unknown"


def batch(global_batch: int, seq_len: int = 0) -> None:
    """Declare the step's global batch (samples over all ranks) and sequence length to the capture
    that is running (module docstring); does nothing outside a capture."""
    if _DECLARED:
        _DECLARED[-1].update(global_batch=int(global_batch), seq_len=int(seq_len))


@contextlib.contextmanager
def declarations() -> Iterator[dict[str, int]]:
    """Collect what the build function declares with `batch` while a capture runs."""
    _DECLARED.append({})
    try:
        yield _DECLARED[-1]
    finally:
        _DECLARED.pop()


def check_declared(global_batch: Any, seq_len: Any) -> None:
    for key, value in (("global_batch", global_batch), ("seq_len", seq_len)):
        if value is not None and (not isinstance(value, int) or value < 0):
            raise ConfigError(key, value, "must be an integer >= 0 (0: infer it from the step)")


def _indices_shape(args: str) -> tuple[int, ...] | None:
    try:
        positional = json.loads(args)[0]
        return tuple(int(size) for size in positional[1]["tensor"][0])
    except (ValueError, IndexError, KeyError, TypeError):
        return None


def _replicas(mesh_shape: tuple[int, ...], dim_names: tuple[str, ...], names: frozenset[str]) -> int:
    return math.prod(size for size, name in zip(mesh_shape, dim_names, strict=True) if name in names)


def inferred_batch(events: Any, mesh_shape: tuple[int, ...], dim_names: tuple[str, ...],
                   times: Any = None) -> StepBatch:
    """The step's batch from its token inputs (module docstring, 3.); `times` (aligned with
    `events`, default once each) says how often each record ran: a replicated capture's replays."""
    events = events.assign(times=1 if times is None else times)
    compute = events[(events.kind == "compute") & (events.phase == "forward")]
    lookups = compute[compute.op == "aten.embedding"]
    if lookups.empty:
        return StepBatch()
    best: tuple[int, int] = (0, 0)  # (tokens, longest dimension) of the rank that embeds most
    for _, rows in lookups.groupby("rank", sort=True):
        first = rows[rows.module == rows.module.iloc[0]]
        shapes = [(shape, int(count)) for shape, count in zip(map(_indices_shape, first.args), first.times,
                                                               strict=True) if shape]
        tokens = sum(math.prod(shape) * count for shape, count in shapes)
        if tokens > best[0]:
            best = (tokens, max(max(shape) for shape, _ in shapes))
    tokens, longest = best
    if tokens == 0:
        return StepBatch()
    attention = compute[[kernel_class_of(op, m).is_attention for op, m in zip(compute.op, compute.gemm_m, strict=True)]]
    seq = int(attention.gemm_n.max()) if not attention.empty and attention.gemm_n.max() > 0 else longest
    sequence_split = _replicas(mesh_shape, dim_names, SEQUENCE_DIMS)
    others = math.prod(mesh_shape) // (_replicas(mesh_shape, dim_names, SAME_SAMPLES_DIMS) * sequence_split)
    return StepBatch(max(1, round(tokens / seq)) * others, seq * sequence_split, "inferred")


def step_batch(program: Any) -> StepBatch:
    """The step's batch: declared (options ``global_batch``, ``seq_len``) or inferred."""
    options = program.options or {}
    declared = int(options.get("global_batch") or 0)
    if declared and int(options.get("seq_len") or 0):
        return StepBatch(declared, int(options["seq_len"]), "declared")
    times = program.multiplicity() if hasattr(program, "multiplicity") else None  # replays repeat their template
    inferred = inferred_batch(program.events, program.mesh_shape, program.mesh_dim_names, times)
    if declared:
        return StepBatch(declared, inferred.seq_len, "declared")
    return inferred


def model_flop(program: Any) -> float:
    """Model FLOPs of one step over all ranks (module docstring)."""
    events = program.events
    times = program.multiplicity() if hasattr(program, "multiplicity") else 1  # replays repeat their template
    flop = events.flop.to_numpy() * times
    chosen = ((events.kind == "compute") & events.phase.isin(MODEL_PHASES) & (events.flop > 0)).to_numpy()
    if not chosen.any():
        return 0.0
    return float(flop[chosen].sum()) / len(program.ranks) * program.num_ranks
