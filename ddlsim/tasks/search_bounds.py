"""Cheap lower bounds on a plan's iteration time: what lets a search skip pricing most plans.

**Compute bound.** Every op of a stage runs on that stage's stream, and communication only adds
time, so the iteration is at least the compute on the longest chain of steps: micro-batch 0's
forward through the chunks before stage t, all of stage t's steps, and micro-batch m - 1's
backward back through those chunks (the send of a decoder's step is its last op):

    LB = max_t  sum_{s<t} (F_s + B_s)  +  m sum_{chunks c of t} (F_c + B_c)

with F_c, B_c the compute of chunk c's forward and backward step (layers, recompute, embedding on
chunk 0, output layer on the last). A layer's compute depends only on (tensor, context, expert,
micro-batch, recompute, sequence parallel), not on pipeline, data or ZeRO (FSDP2's copies around
ZeRO-3 collectives, which do, are left out: the bound only gets lower), so the search builds
one workload per such key (`ComputeBound`) and reads the per-layer times from its blocks, priced
by the very compute model that prices the plans: the bound is the compute part of the priced
iteration, never above it (the search checks this on every plan it prices).

**Communication.** A layer's collectives (tensor/sequence parallel, context ring passes, expert
all-to-alls, ZeRO-3 gathers and scatters; `transformer/collectives.py`) block the stage's stream, so
they lie on the same chain: the *refined* bound adds them, priced by the search's `Pricer` (the
prices the iteration will use), and with no overlap the data-parallel gradient reduction that
follows stage 0's last backward. Pricing them costs more than the compute bound, so the search
refines a plan's bound only when its compute bound cannot rule it out. Where
`ddlsim.network.bounds.lower_bound_s` exists (the physical bound of a collective), the compute
bound also adds that of stage 0's gradient reduction (a hook; without the module it adds 0).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ddlsim.core.types import CollectiveCall, CollectiveOp, Phase, Precision
from ddlsim.core.work import ComputeTask, Workload
from ddlsim.tasks.search_space import PlanKey
from ddlsim.training.pricing import Pricer
from ddlsim.workload.transformer.collectives import LayerCollectives
from ddlsim.workload.transformer.fsdp_copies import COPY_TASKS
from ddlsim.workload.transformer.plan import DecoderPlan
from ddlsim.workload.transformer.shape import DENSE, MOE, DecoderShape

LAYER_BLOCKS = {"forward": "dense_f", "backward": "dense_b", "moe_forward": "moe_f", "moe_backward": "moe_b",
                "embedding_forward": "embedding_f", "embedding_backward": "embedding_b",
                "output_forward": "head_f", "output_backward": "head_b"}


@dataclass(frozen=True)
class LayerCompute:
    """Compute seconds of one micro-batch: per dense and MoE layer, embedding and output layer."""

    dense_f: float = 0.0
    dense_b: float = 0.0
    moe_f: float = 0.0
    moe_b: float = 0.0
    embedding_f: float = 0.0
    embedding_b: float = 0.0
    head_f: float = 0.0
    head_b: float = 0.0


def layer_compute(workload: Workload, pricer: Pricer) -> LayerCompute:
    """Per-repeat compute of a decoder workload's per-micro-batch blocks (names of `transformer/blocks.py`)."""
    found: dict[str, float] = {}
    for block in workload.blocks:
        field_name = LAYER_BLOCKS.get(block.name)
        if field_name is None or not block.per_micro_batch or field_name in found:
            continue
        found[field_name] = sum(pricer.compute(task).time_s * task.count for task in block.tasks
                                if isinstance(task, ComputeTask) and task.name not in COPY_TASKS)
    return LayerCompute(**found)


def compute_key(key: PlanKey) -> tuple:
    return key.tensor, key.context, key.expert, key.micro_batch, key.recompute, key.sequence_parallel


def chain_bound_s(shape: DecoderShape, plan: DecoderPlan, layers: LayerCompute, dense_comm_s: float = 0.0,
                  moe_comm_s: float = 0.0) -> float:
    """The chain bound of the module docstring for one partitioned plan (`*_comm_s`: a layer's
    blocking collectives per micro-batch, 0 for the compute bound)."""
    pp, chunks, chunk_layers = plan.pp, plan.layout.chunks, plan.chunk_layers
    steps, first = [], 0
    for chunk in range(chunks):
        dense, moe = shape.layer_counts(first, chunk_layers[chunk])
        first += chunk_layers[chunk]
        step = dense * (layers.dense_f + layers.dense_b + dense_comm_s) + \
            moe * (layers.moe_f + layers.moe_b + moe_comm_s)
        if chunk == 0:
            step += layers.embedding_f + layers.embedding_b
        if chunk == chunks - 1:
            step += layers.head_f + layers.head_b
        steps.append(step)
    m = plan.micro_batches
    best, fill = 0.0, 0.0
    for stage in range(pp):
        best = max(best, fill + m * sum(steps[stage::pp]))
        fill += steps[stage]
    return best


class ComputeBound:
    """Per-layer compute times by `compute_key`, each read once from one built workload (the cache
    of one search; `clear()` empties it)."""

    def __init__(self, model: Any, pricer: Pricer, memory_bytes: int) -> None:
        self.model, self.pricer, self.memory_bytes = model, pricer, memory_bytes
        self._layers: dict[tuple, LayerCompute] = {}
        self._comm: dict[tuple, float] = {}

    def layers(self, key: PlanKey) -> LayerCompute:
        cache_key = compute_key(key)
        cached = self._layers.get(cache_key)
        if cached is None:
            workload = self.model.build_workload(key.parallel(), self.memory_bytes)
            cached = self._layers[cache_key] = layer_compute(workload, self.pricer)
        return cached

    def bound_s(self, key: PlanKey, plan: DecoderPlan) -> float:
        return chain_bound_s(self.model.decoder, plan, self.layers(key))

    def refined_bound_s(self, key: PlanKey, plan: DecoderPlan, precision: Precision, grad_precision: Precision,
                        gradient_reduction: bool) -> float:
        """The chain bound with every layer's collectives priced, plus (`gradient_reduction`) the
        price of stage 0's data-parallel gradient reduction."""
        calls = LayerCollectives(self.model.decoder, plan.layout, plan.micro_batch,
                                 sequence_parallel=plan.options.sequence_parallel, zero=plan.options.zero,
                                 precision=precision, grad_precision=grad_precision)
        comm = {kind: self._priced(layer_calls(calls, self.model.decoder, plan, kind)) for kind in (DENSE, MOE)}
        bound = chain_bound_s(self.model.decoder, plan, self.layers(key), comm[DENSE], comm[MOE])
        if gradient_reduction and plan.options.zero < 3 and plan.layout.dense_dp > 1:
            op = CollectiveOp.REDUCE_SCATTER if plan.options.zero else CollectiveOp.ALL_REDUCE
            size = grad_precision.bytes_per_element * plan.stages[0].dense_params
            bound += self._priced([CollectiveCall(op, size, plan.layout.data(), Phase.BACKWARD)])
        return bound

    def _priced(self, calls: list[CollectiveCall]) -> float:
        return sum(self.pricer.collective(call).time_s * call.count for call in calls)

    def comm_bound_s(self, fabric: Any, plan: DecoderPlan, grad_bytes_per_param: int) -> float:
        """Physical lower bound of stage 0's dense gradient reduction (0 without `network.bounds`)."""
        try:
            from ddlsim.network.bounds import lower_bound_s
        except ImportError:
            return 0.0
        layout = plan.layout
        if plan.options.zero == 3 or layout.dense_dp < 2:
            return 0.0
        op = CollectiveOp.REDUCE_SCATTER if plan.options.zero else CollectiveOp.ALL_REDUCE
        size = grad_bytes_per_param * plan.stages[0].dense_params
        group = layout.data()
        cache_key = (op, size, group)
        cached = self._comm.get(cache_key)
        if cached is None:
            cached = self._comm[cache_key] = float(lower_bound_s(fabric, op, size, group))
        return cached

    def clear(self) -> None:
        self._layers.clear()
        self._comm.clear()


def layer_calls(calls: LayerCollectives, shape: DecoderShape, plan: DecoderPlan, kind: str) -> list[CollectiveCall]:
    """Every collective one layer of `kind` runs per micro-batch (forward, recompute, backward,
    ZeRO-3 gathers and scatters), as `transformer/blocks.py` lays them out."""
    if kind == MOE and shape.moe is None:
        return []
    recompute = plan.options.recompute
    dense, expert = shape.layer_params_per_rank(kind, plan.tp, plan.ep)
    result = [*calls.fsdp(dense, expert, True, Phase.FORWARD), *calls.layer(kind, Phase.FORWARD),
              *calls.fsdp(dense, expert, True, Phase.BACKWARD), *calls.layer(kind, Phase.BACKWARD),
              *calls.fsdp(dense, expert, False, Phase.BACKWARD)]
    if recompute == "full":
        result += calls.layer(kind, Phase.RECOMPUTE)
    elif recompute == "selective":
        result += calls.ring_passes(Phase.RECOMPUTE)
    return result
