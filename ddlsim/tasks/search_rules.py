"""Why a plan search found no valid plan: the rules its plans broke, named by the search keys.

`enumerate_plans` sets invalid plans aside without saying why (it must be fast). When no plan is
left, `broken_rules` walks the same product once more and checks each rule of docs/workload.md
("Parallel plans") on its own, so that a plan breaking two rules counts for both. The answer
names the rules every plan broke; when no rule is broken by all, the most broken ones with their
counts. It runs only when a search fails.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Callable

from ddlsim.tasks.search_space import SearchSpace
from ddlsim.workload.transformer.layout import tp_divides
from ddlsim.workload.transformer.shape import DecoderShape

# (gpus, tensor, context, pipeline, virtual stages, expert, micro-batch, sequence parallel)
Plan = tuple[int, int, int, int, int, int, int, bool]


def _data(plan: Plan) -> int:
    gpus, tp, cp, pp = plan[:4]
    return gpus // (tp * cp * pp) if gpus % (tp * cp * pp) == 0 else 0


def _micro_batches(plan: Plan, global_batch: int) -> int:
    data, mb = _data(plan), plan[6]
    return global_batch // (data * mb) if data and global_batch % (data * mb) == 0 else 0


def rules(shape: DecoderShape, global_batch: int) -> list[tuple[str, Callable[[Plan], bool]]]:
    """Each rule a plan must keep, as (what it says, whether `plan` breaks it)."""
    seq, moe, layer = shape.layer.seq_len, shape.moe, shape.layer
    experts = f"the {moe.experts} experts" if moe is not None else "1 (the model is dense)"
    return [
        (f"data = gpus / (tensor x context x pipeline) must be a whole number dividing the global batch of "
         f"{global_batch} sequences into micro-batches of micro_batch",
         lambda plan: not _micro_batches(plan, global_batch)),
        (f"tensor must divide the {layer.heads} attention heads, the {shape.kv_heads} KV heads and every MLP width",
         lambda plan: not tp_divides(shape, plan[1])),
        (f"pipeline x virtual_stages must divide the {shape.layers} layers",
         lambda plan: shape.layers % (plan[3] * plan[4]) != 0),
        ("virtual_stages > 1 needs pipeline > 1 and micro-batches a multiple of pipeline",
         lambda plan: plan[4] > 1 and (plan[3] == 1 or _micro_batches(plan, global_batch) % plan[3] != 0)),
        (f"2 x context must divide the sequence of {seq} tokens",
         lambda plan: plan[2] > 1 and seq % (2 * plan[2]) != 0),
        (f"expert must divide {experts}",
         lambda plan: (moe is None and plan[5] > 1) or (moe is not None and moe.experts % plan[5] != 0)),
        ("expert must divide data x context",
         lambda plan: moe is not None and (_data(plan) * plan[2]) % plan[5] != 0),
        ("an MoE model with tensor > 1 needs sequence_parallel",
         lambda plan: moe is not None and plan[1] > 1 and not plan[7]),
    ]


def broken_rules(space: SearchSpace, shape: DecoderShape, global_batch: int, budgets: list[int]) -> str:
    """``every plan breaks: <rule>; <rule>``, else ``rules broken: <rule> (n plans), ...``; "" when
    no plan breaks a rule."""
    checks = rules(shape, global_batch)
    counts: Counter[str] = Counter()
    every: set[str] | None = None
    sequence_parallel = (False, True) if not space.sequence_parallel else (True,)
    weight = len(space.zero) * len(space.recompute)  # plans that differ only in these break the same rules
    for gpus in budgets:
        for tp, cp, pp, v, ep, mb, sp in itertools.product(
                space.tensor, space.context, space.pipelines(shape), space.virtual_stages, space.experts(shape),
                space.micro_batch, sequence_parallel):
            plan = (gpus, tp, cp, pp, v, ep, mb, sp and tp > 1)
            broken = {text for text, breaks in checks if breaks(plan)}
            counts.update(dict.fromkeys(broken, weight))
            every = broken if every is None else every & broken
    if every:
        return "every plan breaks: " + "; ".join(text for text, _ in checks if text in every)
    if not counts:
        return ""
    return "rules broken: " + "; ".join(f"{text} ({count:,} plans)" for text, count in counts.most_common(3))
