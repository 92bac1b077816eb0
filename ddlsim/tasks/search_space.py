"""The plans a search enumerates for a decoder LLM on a GPU budget, and the rules that drop some
before any arithmetic.

A plan is one choice of every degree and option (`PlanKey`): tensor, context, pipeline, virtual
stages, expert, ZeRO stage, micro-batch, recompute, with data = gpus / (tensor x context x
pipeline). `enumerate_plans` walks the Cartesian product of the configured lists in a fixed order
and sets aside, as *invalid*, combinations that break a rule of `docs/workload.md` that needs no
partition (a degree that does not divide what it splits, a global batch that does not divide
into micro-batches, interleaving without pipeline stages or with micro-batches that are not a
multiple of them, ...). Anything these rules miss is caught by `check_plan` later; they only
save its cost.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from ddlsim.errors import ConfigError
from ddlsim.workload.llm.layout import tp_divides
from ddlsim.workload.llm.shape import DecoderShape
from ddlsim.workload.parallel import RECOMPUTE_POLICIES, ParallelConfig

PLAN_FIELDS = ("gpus", "tensor", "context", "pipeline", "virtual_stages", "data", "expert", "zero", "micro_batch",
               "recompute")


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

    def parallel(self) -> ParallelConfig:
        return ParallelConfig(tensor=self.tensor, context=self.context, data=self.data, pipeline=self.pipeline,
                              virtual_stages=self.virtual_stages, expert=self.expert, zero=self.zero,
                              micro_batch=self.micro_batch, gpus=self.gpus, max_gpus=max(self.gpus, 1),
                              recompute=self.recompute, sequence_parallel=self.sequence_parallel)

    def label(self) -> str:
        parts = [f"TP {self.tensor}", f"CP {self.context}" if self.context > 1 else "",
                 f"PP {self.pipeline}" + (f" x v {self.virtual_stages}" if self.virtual_stages > 1 else ""),
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
        return tuple(p for p in range(1, min(shape.layers, self.max_pipeline) + 1) if shape.layers % p == 0)

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
    for tp, cp, pp, v, ep, zero, mb, recompute, sp in itertools.product(
            space.tensor, space.context, space.pipelines(shape), space.virtual_stages, space.experts(shape),
            space.zero, space.micro_batch, space.recompute, sequence_parallel):
        result.enumerated += 1
        sp = sp and tp > 1
        model_split = tp * cp * pp
        data = gpus // model_split if gpus % model_split == 0 else 0
        micro_batches = global_batch // (data * mb) if data and global_batch % (data * mb) == 0 else 0
        if (not data or not micro_batches or not tp_divides(shape, tp) or shape.layers % (pp * v)
                or (v > 1 and (pp == 1 or micro_batches % pp)) or (cp > 1 and seq % (2 * cp))
                or (moe is None and ep > 1) or (moe is not None and (moe.experts % ep or (data * cp) % ep))
                or (moe is not None and tp > 1 and not sp)):
            result.invalid += 1
            continue
        result.candidates.append(PlanKey(gpus, tp, cp, pp, v, data, ep, zero, mb, recompute, sp))
    return result
