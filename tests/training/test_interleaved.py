"""The interleaved 1F1B schedule as Megatron-Core runs it: its order, its stage-to-stage
exchanges (one send per chunk boundary, micro-batch and direction; blocking batches that
synchronise neighbours, or posted asynchronously with ``overlap_p2p_comm``), its bubble, and
1F1B when v = 1. `megatron_reference.py` transcribes Megatron-Core's loop for comparison."""

import random

import pytest
from megatron_reference import megatron_flags, megatron_order, simulate_program
from training_fakes import AlphaBeta, FlopTimer, collective, compute, pipelined

from ddlsim.core.errors import ConfigError
from ddlsim.core.types import CollectiveOp, GroupLayout, Phase
from ddlsim.core.work import TaskBlock, Workload
from ddlsim.training import Overlap, Pricer, TrainingSettings, build_graph, simulate_training
from ddlsim.training.schedules.dispatch import SCHEDULES, select_schedule
from ddlsim.training.schedules.interleaved import (
    exchange_flags,
    interleaved_order,
    last_slot,
    separate_backward_receive,
)
from ddlsim.training.schedules.one_f_one_b import one_f_one_b_order
from ddlsim.training.settings import training_settings
from ddlsim.training.timeline import place


def interleaved(stages, virtual, micro, forward=1.0, backward=2.0, send_bytes=0, dp_bytes=0):
    return pipelined(stages, micro, forward, backward, send_bytes=send_bytes, dp_bytes=dp_bytes, virtual=virtual)


def run(workload, settings=None, bytes_per_s=1.0):
    return simulate_training(workload, Pricer(AlphaBeta(bytes_per_s=bytes_per_s), FlopTimer()),
                             settings or TrainingSettings())


@pytest.mark.parametrize("overlap_p2p_comm", [False, True])
@pytest.mark.parametrize(("stages", "virtual", "micro", "forward", "backward"), [
    (2, 2, 2, 1.0, 2.0), (4, 2, 4, 1.0, 2.0), (4, 2, 8, 1.0, 2.0), (4, 4, 8, 1.0, 1.0), (3, 2, 6, 2.0, 3.0),
    (8, 2, 16, 1.0, 2.0), (8, 4, 32, 1.0, 2.0), (2, 3, 4, 1.0, 2.0)])
def test_uniform_bubble_fraction_is_p_minus_one_over_v_m(stages, virtual, micro, forward, backward, overlap_p2p_comm):
    # Narayanan et al. 2021, Sec. 2.2.2: with equal stages and free communication the bubble is
    # (p - 1)(F + B) / v, a fraction (p - 1) / (v m) of the ideal time m (F + B), however the
    # exchanges block.
    for engine in ("auto", "events"):
        result = run(interleaved(stages, virtual, micro, forward, backward),
                     TrainingSettings(overlap_p2p_comm=overlap_p2p_comm, engine=engine))
        ideal = micro * (forward + backward)
        bubble = result.iteration.iteration_time_s - ideal
        assert bubble / ideal == pytest.approx((stages - 1) / (virtual * micro), rel=1e-12)
        assert result.iteration.compute_time_s == pytest.approx(ideal)


@pytest.mark.parametrize(("stages", "micro"), [(1, 3), (2, 4), (4, 4), (4, 7), (8, 3)])
def test_one_virtual_stage_is_1f1b_exactly(stages, micro):
    # The same ops, durations, dependencies and streams, hence the same timeline, as 1F1B.
    workload = interleaved(stages, 1, micro, send_bytes=1, dp_bytes=4)
    pricer = Pricer(AlphaBeta(bytes_per_s=2.0), FlopTimer())
    settings = TrainingSettings(overlap=Overlap.DP_BACKWARD, bucket_size_bytes=2)
    one_f_one_b = build_graph(workload, pricer, settings)
    forced = SCHEDULES["interleaved_1f1b"](workload, pricer, settings)
    assert [(op.label, op.stream, op.deps, op.duration_s) for op in forced.ops] == \
        [(op.label, op.stream, op.deps, op.duration_s) for op in one_f_one_b.ops]
    for stage in range(stages):
        assert interleaved_order(stage, stages, 1, micro) == [(k, stage, j) for k, j in
                                                              one_f_one_b_order(stage, stages, micro)]


@pytest.mark.parametrize("stages", [2, 3, 4, 5, 6])
@pytest.mark.parametrize("virtual", [2, 3, 4])
def test_order_and_exchanges_are_megatron_cores(stages, virtual):
    # Every stage's chunk steps, and which of its p2p calls send and receive in which direction,
    # against the transcription of Megatron-Core's loop (warm-ups clipped or not). A stage whose
    # warm-up is exactly its m v forwards receives its first gradient in a recv_backward of its
    # own after the last forward exchange: ddlsim's slot flags name both in that slot.
    for micro in range(stages, 4 * stages + 1, stages):
        for stage in range(stages):
            assert interleaved_order(stage, stages, virtual, micro) == megatron_order(stage, stages, virtual, micro)
            flags = []
            for slot in range(-1, last_slot(stage, stages, virtual, micro) + 1):
                send_next, send_prev, recv_prev, recv_next = (bool(flag) for flag in
                                                               exchange_flags(stage, slot, stages, virtual, micro))
                if separate_backward_receive(stage, slot, stages, virtual, micro):
                    flags += [(send_next, send_prev, recv_prev, False), (False, False, False, True)]
                elif send_next or send_prev or recv_prev or recv_next:
                    flags.append((send_next, send_prev, recv_prev, recv_next))
            assert flags == megatron_flags(stage, stages, virtual, micro)


def test_megatron_order_by_hand():
    # p = 2, v = 2, m = 2: stage 0 warms up with 2 (p - s - 1) + (v - 1) p = 4 forwards, chunk 0
    # (micro-batches 0, 1) then chunk 2; backward starts from its last chunk.
    assert interleaved_order(0, 2, 2, 2) == [("F", 0, 0), ("F", 0, 1), ("F", 2, 0), ("F", 2, 1),
                                             ("B", 2, 0), ("B", 2, 1), ("B", 0, 0), ("B", 0, 1)]
    assert interleaved_order(1, 2, 2, 2) == [("F", 1, 0), ("F", 1, 1), ("F", 3, 0), ("B", 3, 0),
                                             ("F", 3, 1), ("B", 3, 1), ("B", 1, 0), ("B", 1, 1)]


@pytest.mark.parametrize(("stages", "virtual", "micro"), [(2, 2, 4), (4, 3, 8), (8, 2, 8), (3, 4, 9)])
def test_every_chunk_runs_every_micro_batch_once_without_deadlock(stages, virtual, micro):
    orders = [interleaved_order(stage, stages, virtual, micro) for stage in range(stages)]
    for stage, order in enumerate(orders):
        expected = {(kind, chunk, j) for kind in "FB" for chunk in range(stage, stages * virtual, stages)
                    for j in range(micro)}
        assert sorted(order) == sorted(expected)
    result = run(interleaved(stages, virtual, micro, send_bytes=1))  # a deadlock raises
    assert result.iteration.iteration_time_s > micro * 3.0


def chunked(stages, virtual, micro, body, send):
    """Chunk c's forward and backward bodies and hand-overs of the given costs (bytes = seconds)."""
    chunks, pair = stages * virtual, GroupLayout(2, 2, 4)
    blocks = [TaskBlock(f"f{c}", (compute("fwd", Phase.FORWARD, body[("F", c)]),), stages=(c,), per_micro_batch=True)
              for c in range(chunks)]
    blocks += [TaskBlock("send_f", (collective("send_f", CollectiveOp.SEND_RECV, send[("F", c)], pair),),
                         stages=(c,), per_micro_batch=True) for c in range(chunks - 1) if send[("F", c)]]
    blocks += [TaskBlock(f"b{c}", (compute("bwd", Phase.BACKWARD, body[("B", c)]),), stages=(c,), per_micro_batch=True)
               for c in range(chunks)]
    blocks += [TaskBlock("send_b", (collective("send_b", CollectiveOp.SEND_RECV, send[("B", c)], pair,
                                               Phase.BACKWARD),), stages=(c,), per_micro_batch=True)
               for c in range(1, chunks) if send[("B", c)]]
    blocks.append(TaskBlock("optimizer", (compute("adam", Phase.OPTIMIZER, 1.0),)))  # starts when its stage is done
    return Workload("chunked", 2 * stages, tuple(blocks), global_batch=micro,
                    plan={"pp_degree": stages, "micro_batches": micro, "virtual_stages": virtual})


@pytest.mark.parametrize("seed", range(40))
def test_blocking_exchanges_time_like_megatrons_calls(seed):
    # The event graph (overlap_p2p_comm False) against Megatron-Core's calls as blocking batches,
    # matched in FIFO order per link: every stage ends its pipeline at the same time.
    rng = random.Random(seed)
    stages, virtual = rng.randint(2, 5), rng.randint(2, 4)
    micro, chunks = stages * rng.randint(1, 4), stages * virtual
    body = {(kind, c): rng.choice([0.5, 1.0, 1.5, 3.0]) for kind in "FB" for c in range(chunks)}
    send = {(kind, c): rng.choice([0, 1, 2]) for kind in "FB" for c in range(chunks)}
    send[("F", chunks - 1)] = send[("B", 0)] = 0
    graph = build_graph(chunked(stages, virtual, micro, body, send), Pricer(AlphaBeta(bytes_per_s=1.0), FlopTimer()),
                        TrainingSettings())
    placement = place(graph)
    ends = [placement.start_s[op.index] for op in graph.ops if op.task.name == "adam"]
    assert ends == pytest.approx(simulate_program(stages, virtual, micro, body, send), rel=1e-12)


def hand_worked(overlap_p2p_comm):
    # p = 2, v = 2, m = 2; per chunk F = 1, B = 2, every hand-over 0.5 (1 byte at 2 B/s).
    workload = pipelined(2, 2, 2.0, 4.0, virtual=2, send_bytes=1)
    settings = TrainingSettings(overlap_p2p_comm=overlap_p2p_comm, engine="events")
    pricer = Pricer(AlphaBeta(bytes_per_s=2.0), FlopTimer())
    graph = build_graph(workload, pricer, settings)
    placement = place(graph)
    times = {(op.stage, op.label.split(".")[0]): (placement.start_s[op.index], placement.end_s[op.index])
             for op in graph.ops}
    return simulate_training(workload, pricer, settings).iteration, times, {op.stream for op in graph.ops}


def test_blocking_exchanges_by_hand():
    """Rounds r = slot + stage (stage 0: F c0 m0, F c0 m1, F c2 m0, F c2 m1, then B c2 m0, B c2 m1,
    B c0 m0, B c0 m1, warm-up 4 = m v; stage 1: F c1 m0, F c1 m1, F c3 m0 + B c3 m0,
    F c3 m1 + B c3 m1, B c1 m0, B c1 m1). A = arrival at the exchange, E = end of the batch
    = max(A, A of the stages it sends to) + its sends, X = max(E, E of the stages sending to it):

    r0: A = (1, 0)      s0 sends F c0 m0: E0 = max(1, 0) + .5 = 1.5; X = (1.5, 1.5)
    r1: A = (2.5, 2.5)  both send forward: X = (3, 3); r2: likewise X = (4.5, 4.5)
    r3: A = (5.5, 7.5)  s0 sends F c2 m1 once s1 has run F c3 m0 + B c3 m0: E0 = 7.5 + .5 = 8;
                        s0's warm-up is all its forwards, so its recv_backward is a call of its
                        own: s1's gradient leaves at max(7.5, 8) and ends at 8.5; X = (8.5, 8.5)
    r4: A = (10.5, 11.5) gradients both ways: X = (12, 12); r5: A = (14, 14), X = (14.5, 14.5)
    r6: A = (16.5, 16.5) s1 sends B c1 m1's gradient: X = (17, 17); r7: s0 ends B c0 m1 at 19.
    """
    iteration, times, streams = hand_worked(False)
    assert iteration.iteration_time_s == pytest.approx(19.0)
    assert times[(0, "send_forward[F1c2]")] == (7.5, 8.0)  # waited 2 for its receiver: the lock-step
    assert times[(1, "send_backward[B0c3]")] == (8.0, 8.5)
    assert times[(1, "forward[F1c3]")][0] == 8.5  # the next slot starts when the whole exchange has
    assert streams == {"stage0", "stage1"}  # sends block the stage's own stream


def test_overlapped_exchanges_by_hand():
    """The same with overlap_p2p_comm: warm-up and cool-down exchanges still block, stage 1's
    steady slots post their sends on stage1_p2p and go on. r3: s0's F c2 m1 leaves when s1 has
    posted its receive after F c3 m0 (5.5) and ends at 6; s1's gradient of B c3 m0 leaves at 7.5
    while s1 runs F c3 m1 (7.5-8.5) rather than waiting; s0's recv_backward ends at 8, so B c2 m0
    runs 8-10 (blocking: 8.5-10.5). r4: gradients both ways at max(10, 10.5) end at 11; r5, r6
    as before, 2.5 earlier; s0 ends at 18."""
    iteration, times, streams = hand_worked(True)
    assert iteration.iteration_time_s == pytest.approx(18.0)
    assert times[(0, "send_forward[F1c2]")] == (5.5, 6.0)
    assert times[(1, "send_backward[B0c3]")] == (7.5, 8.0)
    assert times[(1, "forward[F1c3]")] == (7.5, 8.5)
    assert times[(0, "backward[B0c2]")] == (8.0, 10.0)
    assert streams == {"stage0", "stage1", "stage0_p2p", "stage1_p2p"}


def test_overlap_p2p_comm_is_a_training_option():
    assert training_settings({"overlap_p2p_comm": True}).overlap_p2p_comm is True
    assert training_settings({}).overlap_p2p_comm is False  # Megatron-Core's default
    with pytest.raises(ConfigError, match="training.overlap_p2p_comm"):
        training_settings({"overlap_p2p_comm": "sometimes"})


def test_micro_batches_must_be_a_multiple_of_the_stages():
    with pytest.raises(ConfigError, match="multiple of the 4 pipeline stages"):
        interleaved_order(0, 4, 2, 6)


def test_auto_and_1f1b_run_the_interleaved_schedule_when_the_plan_has_virtual_stages():
    workload = interleaved(4, 2, 8)
    assert select_schedule(TrainingSettings(), workload).__name__ == "one_f_one_b_schedule"
    auto = run(workload)
    forced = simulate_training(workload, Pricer(AlphaBeta(), FlopTimer()), TrainingSettings(schedule="1f1b"))
    assert auto.iteration.iteration_time_s == forced.iteration.iteration_time_s == pytest.approx(24 + 3 * 3 / 2)


def test_interleaving_shrinks_the_bubble_of_a_real_gpt():
    from ddlsim.core.registry import MODELS
    from ddlsim.workload.parallel import ParallelConfig

    model = MODELS.make("gpt", layers=8, global_batch=16)
    times = {}
    for virtual in (1, 2):
        workload = model.build_workload(ParallelConfig(tensor=1, data=1, pipeline=4, virtual_stages=virtual,
                                                       micro_batch=2, max_gpus=4), 80 * 2**30)
        assert workload.plan["virtual_stages"] == virtual
        result = simulate_training(workload, Pricer(AlphaBeta(bytes_per_s=1e15), FlopTimer(1e14)),
                                   TrainingSettings())
        times[virtual] = result.iteration.iteration_time_s
        executions = {}
        for op in build_graph(workload, Pricer(AlphaBeta(bytes_per_s=1e15), FlopTimer(1e14)),
                              TrainingSettings()).ops:
            executions[op.task.name] = executions.get(op.task.name, 0) + op.executions
        assert executions["layer_forward"] == executions["layer_backward"] == 8 * 8  # 8 micro-batches x 8 layers
        # one send per chunk boundary, micro-batch and direction: v times 1F1B's, less one boundary
        assert executions["pp_send_forward"] == executions["pp_send_backward"] == 8 * (4 * virtual - 1)
    assert times[2] < times[1]


def test_sends_are_full_activations_or_scatter_gather_splits():
    # TP 2 without SP: each chunk boundary sends 1/TP of the activation and the receiving chunk
    # all-gathers it over the tensor group (Megatron's scatter-gather), in both directions.
    from ddlsim.core.registry import MODELS
    from ddlsim.workload.parallel import ParallelConfig

    model = MODELS.make("gpt", layers=8, global_batch=16, d_model=1024, seq_len=1024)
    pricer = Pricer(AlphaBeta(bytes_per_s=1e15), FlopTimer(1e14))
    sizes = {}
    for tensor in (1, 2):
        workload = model.build_workload(ParallelConfig(tensor=tensor, data=1, pipeline=2, virtual_stages=2,
                                                       micro_batch=2, max_gpus=2 * tensor), 80 * 2**30)
        ops = build_graph(workload, pricer, TrainingSettings()).ops
        sends = [op for op in ops if op.task.name.startswith("pp_send")]
        gathers = [op for op in ops if op.task.name.startswith("pp_gather")]
        assert len(sends) == 2 * 8 * 3  # 8 micro-batches x 3 chunk boundaries x 2 directions
        assert len(gathers) == (0 if tensor == 1 else len(sends))
        sizes[tensor] = {op.task.size_bytes for op in sends}
        assert all(op.task.size_bytes == tensor * op_size for op in gathers for op_size in sizes[tensor])
    activation = 2 * 1024 * 1024 * 2  # micro-batch x sequence x d_model x 2 bytes (fp16)
    assert sizes == {1: {activation}, 2: {activation // 2}}
