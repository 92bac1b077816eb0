"""The closed-form pipelined iteration equals the event simulation, field by field.

`analytic_iteration` (1F1B closed form, interleaved round engine, tail in closed form) against
`summarize(place(build_graph(...)))`, which lays out every op: random pipelines with stages and
chunks that differ (an embedding on the first chunk, an output layer on the last, random extra
work, sends and gathers of random cost, hand-overs before a step's end, empty steps), random
micro-batches, virtual stages, overlap settings and bucket sizes, and real GPT and HF decoder
workloads. Equal within floating rounding: the closed forms add the same durations in another
order.
"""

from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from training_fakes import AlphaBeta, FlopTimer, collective, compute

from ddlsim.core.types import CollectiveOp, GroupLayout, Phase
from ddlsim.core.work import TaskBlock, Workload
from ddlsim.training import Overlap, Pricer, TrainingSettings, build_graph
from ddlsim.training.analytic import analytic_iteration
from ddlsim.training.timeline import place, summarize

STAGE_RANKS = 2
REL = 1e-9


def random_pipeline(rng: random.Random, stages: int, virtual: int, micro: int) -> Workload:
    """A pipelined workload whose chunks differ: see the module docstring."""
    chunks = stages * virtual
    ranks = stages * STAGE_RANKS
    pair = GroupLayout(2, STAGE_RANKS, 2 * STAGE_RANKS)
    tensor = GroupLayout(2, 1, STAGE_RANKS)
    layer_f = [compute("layer_f", Phase.FORWARD, rng.choice([1.0, 2.0, 1.5]))]
    layer_b = [compute("layer_b", Phase.BACKWARD, rng.choice([2.0, 3.0, 2.5]))]
    if rng.random() < 0.5:
        layer_f.append(collective("tp_f", CollectiveOp.ALL_REDUCE, rng.randint(1, 4), tensor))
        layer_b.insert(0, compute("recompute", Phase.RECOMPUTE, 1.0))
        layer_b.append(collective("tp_b", CollectiveOp.ALL_REDUCE, rng.randint(1, 4), tensor, Phase.BACKWARD))
    if rng.random() < 0.2:  # a ring pass inside the layer: a send/recv that is not the hand-over
        layer_f.append(collective("cp_ring", CollectiveOp.SEND_RECV, 1, pair))
        layer_b.append(collective("cp_ring_b", CollectiveOp.SEND_RECV, 1, pair, Phase.BACKWARD))
    repeat = rng.randint(1, 3)
    send = rng.choice([0, 0, 1, 2])
    gather = rng.random() < 0.3
    late_send = rng.random() < 0.15  # the send is not the step's last op

    def extra(name: str, phase: Phase) -> list[TaskBlock]:
        blocks = []
        for _ in range(rng.randint(0, 2)):
            members = tuple(sorted(rng.sample(range(chunks), rng.randint(1, chunks))))
            blocks.append(TaskBlock(name, (compute(name, phase, rng.choice([0.5, 1.0, 4.0])),), stages=members,
                                    per_micro_batch=True))
        return blocks

    forward: list[TaskBlock] = []
    if gather and chunks > 1:
        forward.append(TaskBlock("gather_f", (collective("pp_gather_f", CollectiveOp.ALL_GATHER, 2, tensor),),
                                 stages=tuple(range(1, chunks)), per_micro_batch=True))
    forward.append(TaskBlock("embedding", (compute("embedding", Phase.FORWARD, rng.choice([0.0, 0.5, 3.0])),),
                             stages=(0,), per_micro_batch=True))
    forward.append(TaskBlock("forward", tuple(layer_f), repeat=repeat, per_micro_batch=True))
    forward += extra("extra_f", Phase.FORWARD)
    forward.append(TaskBlock("output", (compute("output", Phase.FORWARD, rng.choice([0.5, 2.0, 6.0])),),
                             stages=(chunks - 1,), per_micro_batch=True))
    send_f = [TaskBlock("send_f", (collective("pp_send_f", CollectiveOp.SEND_RECV, send, pair),),
                        stages=tuple(range(chunks - 1)), per_micro_batch=True)] if send and chunks > 1 else []
    tail_f = [TaskBlock("after_send_f", (compute("after_send", Phase.FORWARD, 0.5),), per_micro_batch=True)] \
        if late_send else []
    backward: list[TaskBlock] = [TaskBlock("output_b", (compute("output_b", Phase.BACKWARD, 3.0),),
                                           stages=(chunks - 1,), per_micro_batch=True),
                                 TaskBlock("backward", tuple(layer_b), repeat=repeat, per_micro_batch=True)]
    backward += extra("extra_b", Phase.BACKWARD)
    send_b = [TaskBlock("send_b", (collective("pp_send_b", CollectiveOp.SEND_RECV, send, pair, Phase.BACKWARD),),
                        stages=tuple(range(1, chunks)), per_micro_batch=True)] if send and chunks > 1 else []
    tail: list[TaskBlock] = []
    dp = GroupLayout(STAGE_RANKS, 1, STAGE_RANKS)
    if rng.random() < 0.8:
        split = rng.randint(1, stages)
        for members, size in ((tuple(range(split)), rng.randint(1, 40)), (tuple(range(split, stages)), 20)):
            if members:
                tail.append(TaskBlock("dp", (collective("dp_grad", CollectiveOp.ALL_REDUCE, size, dp,
                                                        Phase.BACKWARD),), stages=members))
    if rng.random() < 0.5 and stages > 1:
        ends = GroupLayout(2, (stages - 1) * STAGE_RANKS, 2 * (stages - 1) * STAGE_RANKS)  # first and last stage
        tail.append(TaskBlock("embedding_sync", (collective("embedding_sync", CollectiveOp.ALL_REDUCE, 3, ends,
                                                            Phase.BACKWARD),), stages=(0, stages - 1)))
    if rng.random() < 0.5 and stages > 1:
        tail.append(TaskBlock("sync", (collective("sync", CollectiveOp.ALL_REDUCE, 1,
                                                  GroupLayout(stages, STAGE_RANKS, ranks), Phase.OPTIMIZER),)))
    tail.append(TaskBlock("optimizer", (compute("adam", Phase.OPTIMIZER, rng.choice([0.0, 0.5, 2.0])),)))
    if rng.random() < 0.3:
        tail.append(TaskBlock("gather", (collective("param_gather", CollectiveOp.ALL_GATHER, 8, dp,
                                                    Phase.OPTIMIZER),)))
    blocks = [*forward, *send_f, *tail_f, *backward, *send_b, *tail]
    plan = {"pp_degree": stages, "micro_batches": micro}
    if virtual > 1:
        plan["virtual_stages"] = virtual
    return Workload("random_pipe", ranks, tuple(blocks), global_batch=micro, plan=plan)


def assert_same(analytic, events) -> None:
    scale = events.iteration_time_s
    close = pytest.approx
    for name in ("iteration_time_s", "compute_time_s", "comm_time_s", "comm_latency_s", "comm_transfer_s",
                 "comm_reduction_s"):
        assert getattr(analytic, name) == close(getattr(events, name), rel=REL, abs=REL * scale), name
    for name in ("exposed_comm_time_s", "hidden_comm_time_s", "bubble_time_s"):
        assert getattr(analytic, name) == close(getattr(events, name), abs=1e-9 * scale), name
    assert analytic.num_ops == events.num_ops
    assert analytic.compute_devices == events.compute_devices
    assert [key for key, _ in analytic.compute_time_by_source_s] == [key for key, _ in events.compute_time_by_source_s]
    for (_, a), (_, e) in zip(analytic.compute_time_by_source_s, events.compute_time_by_source_s, strict=True):
        assert a == close(e, rel=REL)
    assert [item.key for item in analytic.collectives] == [item.key for item in events.collectives]
    for a, e in zip(analytic.collectives, events.collectives, strict=True):
        assert (a.op, a.algorithm, a.calls, a.size_bytes, a.group_size) == (e.op, e.algorithm, e.calls, e.size_bytes,
                                                                           e.group_size)
        for name in ("time_s", "latency_s", "transfer_s", "compute_s"):
            assert getattr(a, name) == close(getattr(e, name), rel=REL, abs=REL * scale), (a.key, name)


def both(workload: Workload, pricer: Pricer, training: TrainingSettings):
    graph = build_graph(workload, pricer, training)
    return analytic_iteration(workload, pricer, training), summarize(graph, place(graph))


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1), stages=st.integers(1, 6), virtual=st.sampled_from([1, 1, 2, 3]),
       micro_factor=st.integers(1, 7), overlap=st.booleans(), bucket=st.sampled_from([3, 8, 1000]),
       alpha=st.sampled_from([0.0, 0.25]))
def test_closed_form_equals_the_event_simulation(seed, stages, virtual, micro_factor, overlap, bucket, alpha):
    rng = random.Random(seed)
    virtual = 1 if stages == 1 else virtual
    micro = micro_factor * stages if virtual > 1 else rng.randint(1, 4 * stages + 3)
    workload = random_pipeline(rng, stages, virtual, micro)
    pricer = Pricer(AlphaBeta(alpha_s=alpha, bytes_per_s=rng.choice([1.0, 3.0]), reduction_share=0.25), FlopTimer())
    training = TrainingSettings(overlap=Overlap.DP_BACKWARD if overlap else Overlap.NONE, bucket_size_bytes=bucket)
    analytic, events = both(workload, pricer, training)
    if analytic is None:  # refused: a hand-over that moves when the last backward's repeats are expanded
        assert overlap, "the closed form refused a case without overlap"
        return
    assert_same(analytic, events)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1), stages=st.integers(2, 6), virtual=st.sampled_from([2, 3, 4]),
       micro_factor=st.integers(1, 12), overlap=st.booleans(), bucket=st.sampled_from([3, 8, 1000]),
       alpha=st.sampled_from([0.0, 0.25]))
def test_overlapped_exchanges_equal_the_event_simulation(seed, stages, virtual, micro_factor, overlap, bucket, alpha):
    """``overlap_p2p_comm``: sends on each stage's p2p stream, overlapping its steps (`overlapped.py`)."""
    rng = random.Random(seed)
    workload = random_pipeline(rng, stages, virtual, micro_factor * stages)
    pricer = Pricer(AlphaBeta(alpha_s=alpha, bytes_per_s=rng.choice([1.0, 3.0]), reduction_share=0.25), FlopTimer())
    training = TrainingSettings(overlap=Overlap.DP_BACKWARD if overlap else Overlap.NONE, bucket_size_bytes=bucket,
                                overlap_p2p_comm=True)
    analytic, events = both(workload, pricer, training)
    assert analytic is not None
    assert_same(analytic, events)


@pytest.mark.parametrize(("stages", "virtual", "micro"), [(4, 1, 64), (8, 1, 200), (3, 2, 60), (4, 3, 48),
                                                          (6, 1, 6), (5, 2, 20)])
@pytest.mark.parametrize("overlap", [Overlap.NONE, Overlap.DP_BACKWARD])
def test_long_pipelines_skip_their_steady_middle_exactly(stages, virtual, micro, overlap):
    rng = random.Random(stages * 100 + virtual * 10 + micro)
    workload = random_pipeline(rng, stages, virtual, micro)
    pricer = Pricer(AlphaBeta(bytes_per_s=2.0), FlopTimer())
    analytic, events = both(workload, pricer, TrainingSettings(overlap=overlap, bucket_size_bytes=7))
    if analytic is not None:
        assert_same(analytic, events)


@pytest.mark.parametrize("case", [
    dict(model="gpt", layers=8, global_batch=64, parallel=dict(tensor=2, data=2, pipeline=4, micro_batch=1)),
    dict(model="gpt", layers=8, global_batch=64, parallel=dict(tensor=2, data=2, pipeline=2, virtual_stages=2,
                                                               micro_batch=1)),
    dict(model="gpt", layers=12, global_batch=48, parallel=dict(tensor=1, data=2, pipeline=4, virtual_stages=3,
                                                                micro_batch=2, zero=1)),
    dict(model="hf", config="mixtral_8x7b", global_batch=64,
         parallel=dict(tensor=2, data=4, pipeline=4, expert=4, micro_batch=1, sequence_parallel=True, zero=1)),
    dict(model="hf", config="llama3_8b", global_batch=32,
         parallel=dict(tensor=4, context=2, data=2, pipeline=4, micro_batch=1, sequence_parallel=True,
                       recompute="selective")),
])
@pytest.mark.parametrize("overlap", [Overlap.NONE, Overlap.DP_BACKWARD])
def test_decoder_workloads_match(case, overlap):
    from ddlsim.core.registry import MODELS
    from ddlsim.workload.parallel import ParallelConfig

    options = {key: value for key, value in case.items() if key not in ("model", "parallel")}
    model = MODELS.make(case["model"], **options)
    workload = model.build_workload(ParallelConfig(**case["parallel"]), 80 * 2**30)
    pricer = Pricer(AlphaBeta(alpha_s=1e-5, bytes_per_s=1e11, reduction_share=0.1), FlopTimer(1e14))
    analytic, events = both(workload, pricer, TrainingSettings(overlap=overlap))
    assert analytic is not None
    assert_same(analytic, events)
