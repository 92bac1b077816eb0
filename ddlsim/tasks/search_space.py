"""The plans a search enumerates for a decoder LLM on a GPU budget, and the rules that drop some
before any arithmetic.

A plan is one choice of every degree and option (`PlanKey`): tensor, context, pipeline, virtual
stages, expert, ZeRO stage, micro-batch, recompute, the layers of the first and last pipeline
stages, with data = gpus / (tensor x context x pipeline).

Uneven stages (`uneven_stages`, on by default): pipelines that do not divide the layers are
tried where Megatron-Core's embedding/loss accounting splits them exactly (L + 1 or L + 2
layers divide by the pipeline: Llama 3 405B's 126 layers on 4, 8 or 16 stages), with the
automatic split of `ddlsim/workload/transformer/stages.py`; where the split is even, the same split with
one layer per chunk fewer on the first and the last stage (Megatron-Core's
``num_layers_in_first/last_pipeline_stage``) is tried beside it when the middle stages can take
those layers evenly. That adds a few pipelines and a few splits, not a dimension.

`enumerate_plans` walks the Cartesian product of the configured lists in a fixed order and sets
aside, as *invalid*, combinations that break a rule of `docs/workload.md` that needs no partition
(a degree that does not divide what it splits, layers that do not split over the pipeline, a
global batch that does not divide into micro-batches, interleaving without pipeline stages or
with micro-batches that are not a multiple of them, ...). Anything these rules miss is caught by
`check_plan` later; they only save its cost.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from ddlsim.core.errors import ConfigError
from ddlsim.workload.parallel import RECOMPUTE_POLICIES, ParallelConfig
from ddlsim.workload.transformer.layout import tp_divides
from ddlsim.workload.transformer.shape import DecoderShape
from ddlsim.workload.transformer.stages import split_layers

PLAN_FIELDS = ("gpus", "tensor", "context", "pipeline", "virtual_stages", "data", "expert", "zero", "micro_batch",
               "recompute", "first_stage_layers", "last_stage_layers")


@dataclass(frozen=True, order=True)
class PlanKey:
    """One plan; ordered field by field (the search's deterministic tie-break)."""

    gpus: int
    tensor: int
    context: int
    pipeline: int
    virtual_stages: int
    data: int
    expert: int
    zero: int
    micro_batch: int
    recompute: str
    sequence_parallel: bool
    first_stage_layers: int = 0
    last_stage_layers: int = 0

    def parallel(self) -> ParallelConfig:
        return ParallelConfig(tensor=self.tensor, context=self.context, data=self.data, pipeline=self.pipeline,
                              virtual_stages=self.virtual_stages, expert=self.expert, zero=self.zero,
                              micro_batch=self.micro_batch, gpus=self.gpus, max_gpus=max(self.gpus, 1),
                              recompute=self.recompute, sequence_parallel=self.sequence_parallel,
                              first_stage_layers=self.first_stage_layers, last_stage_layers=self.last_stage_layers)

    def label(self) -> str:
        ends = f" (first {self.first_stage_layers}, last {self.last_stage_layers} layers)" \
            if self.first_stage_layers or self.last_stage_layers else ""
        parts = [f"TP {self.tensor}", f"CP {self.context}" if self.context > 1 else "",
                 f"PP {self.pipeline}" + (f" x v {self.virtual_stages}" if self.virtual_stages > 1 else "") + ends,
                 f"DP {self.data}", f"EP {self.expert}" if self.expert > 1 else "", f"ZeRO {self.zero}",
                 f"mb {self.micro_batch}", f"recompute {self.recompute}"]
        return ", ".join(part for part in parts if part)


@dataclass(frozen=True)
class SearchSpace:
    """The lists a search takes its degrees from (`task=search` keys of the same names)."""

    tensor: tuple[int, ...] = (1, 2, 4, 8)
    pipeline: tuple[int, ...] = ()  # () = every divisor of the layers up to max_pipeline
    max_pipeline: int = 16
    virtual_stages: tuple[int, ...] = (1, 2, 4)
    context: tuple[int, ...] = (1, 2, 4)
    expert: tuple[int, ...] = ()  # () = 1 for dense models; powers of two dividing the experts up to max_expert
    max_expert: int = 64
    zero: tuple[int, ...] = (0, 1, 2, 3)
    micro_batch: tuple[int, ...] = (1, 2)
    recompute: tuple[str, ...] = ("none", "selective", "full")
    sequence_parallel: bool = True
    uneven_stages: bool = True

    def __post_init__(self) -> None:
        for key in ("tensor", "pipeline", "virtual_stages", "context", "expert", "micro_batch"):
            if any(not isinstance(value, int) or value < 1 for value in getattr(self, key)):
                raise ConfigError(key, list(getattr(self, key)), "must list integers >= 1")
        if any(value not in (0, 1, 2, 3) for value in self.zero) or not self.zero:
            raise ConfigError("zero", list(self.zero), "must list ZeRO stages among 0, 1, 2, 3")
        if any(policy not in RECOMPUTE_POLICIES for policy in self.recompute) or not self.recompute:
            raise ConfigError("recompute", list(self.recompute),
                              f"must list policies among {', '.join(RECOMPUTE_POLICIES)}")
        for key in ("max_pipeline", "max_expert"):
            if getattr(self, key) < 1:
                raise ConfigError(key, getattr(self, key), "must be >= 1")
        for key in ("tensor", "virtual_stages", "context", "micro_batch"):
            if not getattr(self, key):
                raise ConfigError(key, [], "must list at least one value")

    def pipelines(self, shape: DecoderShape) -> tuple[int, ...]:
        if self.pipeline:
            return self.pipeline
        layers = shape.layers
        return tuple(p for p in range(1, min(layers, self.max_pipeline) + 1)
                     if layers % p == 0 or (self.uneven_stages and ((layers + 1) % p == 0 or (layers + 2) % p == 0)))

    def splits(self, shape: DecoderShape, pipeline: int, virtual_stages: int) -> tuple[tuple[int, int], ...]:
        """(first_stage_layers, last_stage_layers) to try; () when the layers do not split."""
        try:
            chunk_layers = split_layers(shape.layers, pipeline, virtual_stages)
        except ConfigError:
            return ()
        found = [(0, 0)]
        even = min(chunk_layers) == max(chunk_layers)
        if self.uneven_stages and even and pipeline >= 3 and chunk_layers[0] > 1:
            ends = virtual_stages * (chunk_layers[0] - 1)
            try:
                split_layers(shape.layers, pipeline, virtual_stages, ends, ends)
                found.append((ends, ends))
            except ConfigError:
                pass
        return tuple(found)

    def experts(self, shape: DecoderShape) -> tuple[int, ...]:
        if self.expert:
            return self.expert
        if shape.moe is None:
            return (1,)
        return tuple(e for e in (2**k for k in range(0, self.max_expert.bit_length()))
                     if e <= self.max_expert and shape.moe.experts % e == 0)


@dataclass
class Enumeration:
    """Every plan of the product, split into the ones to evaluate and the count of invalid ones."""

    candidates: list[PlanKey]
    enumerated: int = 0
    invalid: int = 0


def enumerate_plans(space: SearchSpace, shape: DecoderShape, global_batch: int, gpus: int) -> Enumeration:
    """The plans of `space` on exactly `gpus` GPUs, in a fixed order, invalid ones counted out."""
    result = Enumeration([])
    seq, moe = shape.layer.seq_len, shape.moe
    sequence_parallel = (False, True) if not space.sequence_parallel else (True,)
    pipelines = space.pipelines(shape)
    splits = {(pp, v): space.splits(shape, pp, v) for pp in pipelines for v in space.virtual_stages}
    for tp, cp, pp, v, ep, zero, mb, recompute, sp in itertools.product(
            space.tensor, space.context, pipelines, space.virtual_stages, space.experts(shape),
            space.zero, space.micro_batch, space.recompute, sequence_parallel):
        ends = splits[(pp, v)]
        result.enumerated += max(1, len(ends))
        sp = sp and tp > 1
        model_split = tp * cp * pp
        data = gpus // model_split if gpus % model_split == 0 else 0
        micro_batches = global_batch // (data * mb) if data and global_batch % (data * mb) == 0 else 0
        if (not data or not micro_batches or not tp_divides(shape, tp) or not ends
                or (v > 1 and (pp == 1 or micro_batches % pp)) or (cp > 1 and seq % (2 * cp))
                or (moe is None and ep > 1) or (moe is not None and (moe.experts % ep or (data * cp) % ep))
                or (moe is not None and tp > 1 and not sp)):
            result.invalid += max(1, len(ends))
            continue
        for first, last in ends:
            result.candidates.append(PlanKey(gpus, tp, cp, pp, v, data, ep, zero, mb, recompute, sp, first, last))
    return result
