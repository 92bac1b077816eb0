"""The 1F1B pipeline schedule on hand-built workloads, against times worked out by hand."""

import pytest
from training_fakes import AlphaBeta, FlopTimer, pipelined

from ddlsim.core.errors import ConfigError
from ddlsim.core.work import Workload
from ddlsim.training import Overlap, Pricer, TrainingSettings, build_graph, simulate_training
from ddlsim.training.schedules.dispatch import select_schedule
from ddlsim.training.schedules.one_f_one_b import one_f_one_b_order
from ddlsim.training.schedules.stages import split_steps
from ddlsim.training.timeline import place


def run(workload, settings=None, bytes_per_s=1.0):
    return simulate_training(workload, Pricer(AlphaBeta(bytes_per_s=bytes_per_s), FlopTimer()),
                             settings or TrainingSettings())


def test_order_has_warmup_steady_and_cooldown():
    assert one_f_one_b_order(0, 4, 6) == [("F", 0), ("F", 1), ("F", 2), ("F", 3), ("B", 0), ("F", 4), ("B", 1),
                                          ("F", 5), ("B", 2), ("B", 3), ("B", 4), ("B", 5)]
    assert one_f_one_b_order(3, 4, 2) == [("F", 0), ("B", 0), ("F", 1), ("B", 1)]
    assert one_f_one_b_order(0, 4, 2) == [("F", 0), ("F", 1), ("B", 0), ("B", 1)]  # fewer micro-batches than warm-up


@pytest.mark.parametrize(("stages", "micro"), [(1, 1), (1, 5), (2, 1), (2, 4), (4, 4), (4, 16), (8, 3)])
def test_equal_stages_take_m_plus_p_minus_one_slots(stages, micro):
    # Without communication 1F1B's bubble is (p - 1) x (F + B): iteration = (m + p - 1)(F + B).
    result = run(pipelined(stages, micro))
    assert result.iteration.iteration_time_s == pytest.approx((micro + stages - 1) * 3.0)
    assert result.iteration.compute_time_s == pytest.approx(micro * 3.0)


@pytest.mark.parametrize(("stages", "micro", "send_bytes"), [(2, 2, 0), (4, 4, 0), (4, 4, 1), (3, 8, 2)])
def test_the_bubble_is_its_own_part_never_communication(stages, micro, send_bytes):
    """Finding 8: with pipeline stages the bubble was counted as exposed communication."""
    it = run(pipelined(stages, micro, send_bytes=send_bytes), bytes_per_s=2.0).iteration
    assert it.compute_time_s + it.exposed_comm_time_s + it.bubble_time_s == pytest.approx(it.iteration_time_s)
    assert it.exposed_comm_time_s <= it.comm_time_s
    assert it.comm_fraction == pytest.approx(it.exposed_comm_time_s / it.iteration_time_s)
    if not send_bytes:  # (p - 1) x (F + B) of idle time, and no communication at all
        assert it.bubble_time_s == pytest.approx((stages - 1) * 3.0) and it.exposed_comm_time_s == 0


def test_blocking_sends_by_hand():
    # p = 2, m = 2, F = 1 s, B = 2 s, each send 0.5 s on the sender's stream (worked out in the
    # comments of one_f_one_b.py's order): stage 1 ends B1 at 8 s, its send at 8.5 s, stage 0's B1
    # runs from 8.5 s to 10.5 s.
    result = run(pipelined(2, 2, send_bytes=1), bytes_per_s=2.0)
    assert result.iteration.iteration_time_s == pytest.approx(10.5)
    # The busiest stage (stage 0 has compute 6 s like stage 1; the first is taken) sends twice
    # (1 s of exposed communication) and waits 3.5 s for stage 1: 1 s of F + B0's 2 s + a send.
    assert result.iteration.exposed_comm_time_s == pytest.approx(1.0)
    assert result.iteration.bubble_time_s == pytest.approx(3.5)
    graph = build_graph(pipelined(2, 2, send_bytes=1), Pricer(AlphaBeta(bytes_per_s=2.0), FlopTimer()),
                        TrainingSettings())
    placement = place(graph)
    starts = {(op.stage, op.label): placement.start_s[op.index] for op in graph.ops}
    assert starts[(1, "backward[B0].bwd")] == pytest.approx(2.5)
    assert starts[(0, "backward[B0].bwd")] == pytest.approx(5.0)
    assert starts[(1, "backward[B1].bwd")] == pytest.approx(6.0)
    assert starts[(0, "backward[B1].bwd")] == pytest.approx(8.5)


def test_cross_stage_tail_waits_for_the_slowest_stage():
    # The sync all-reduce spans the stages: every stage starts it when the last stage is ready
    # (stage 0 finishes last, at (m + p - 1) x 3 s); each stage's optimizer runs after it.
    result = run(pipelined(4, 4, tail_sync_bytes=1, optimizer=0.5))
    assert result.iteration.iteration_time_s == pytest.approx(7 * 3.0 + 1.0 + 0.5)


def test_dp_overlap_hides_buckets_behind_the_last_backward():
    workload = pipelined(2, 2, dp_bytes=8)
    plain = run(workload, TrainingSettings(overlap=Overlap.NONE))
    assert plain.iteration.iteration_time_s == pytest.approx(3 * 3.0 + 8.0)
    bucketed = run(workload, TrainingSettings(overlap=Overlap.DP_BACKWARD, bucket_size_bytes=8))
    assert bucketed.iteration.iteration_time_s == pytest.approx(plain.iteration.iteration_time_s)  # one bucket
    # Two 4-byte buckets: stage 0's last backward (1 op) releases both at its end, 9 s: no gain,
    # so the rule never makes an iteration faster than its gradients allow.
    split = run(workload, TrainingSettings(overlap=Overlap.DP_BACKWARD, bucket_size_bytes=4))
    assert split.iteration.iteration_time_s == pytest.approx(9.0 + 8.0)


def test_breakdown_counts_one_stage_of_a_pipeline():
    result = run(pipelined(4, 4, send_bytes=1))
    sends = {item.key: item.calls for item in result.iteration.collectives}
    # The busiest stage's own sends: one per micro-batch in one direction for an end stage.
    assert sum(sends.values()) == 4


def test_steps_must_list_forward_before_backward():
    workload = pipelined(2, 2)
    swapped = Workload("bad", 4, (workload.blocks[1], workload.blocks[0]), plan=workload.plan)
    with pytest.raises(ConfigError, match="forward step before the backward step"):
        split_steps(swapped)


def test_auto_picks_1f1b_and_sequential_refuses_micro_batches():
    workload = pipelined(1, 3)
    assert select_schedule(TrainingSettings(), workload).__name__ == "one_f_one_b_schedule"
    with pytest.raises(ConfigError, match="micro-batches"):
        select_schedule(TrainingSettings(schedule="sequential"), workload)


def test_gpt_workload_runs_every_layer_of_every_micro_batch_once():
    from ddlsim.core.registry import MODELS
    from ddlsim.workload.parallel import ParallelConfig

    workload = MODELS.make("gpt", layers=8, global_batch=24).build_workload(
        ParallelConfig(tensor=2, data=2, pipeline=4, micro_batch=2), 80 * 2**30)
    graph = build_graph(workload, Pricer(AlphaBeta(bytes_per_s=1e12), FlopTimer(1e15)), TrainingSettings())
    executions: dict[str, int] = {}
    for op in graph.ops:
        name = getattr(op.task, "name", "")
        executions[name] = executions.get(name, 0) + op.executions
    micro = workload.plan["micro_batches"]
    assert micro == 6
    assert executions["layer_forward"] == executions["layer_backward"] == micro * 8
    assert executions["layer_recompute"] == micro * 8
    assert executions["embedding_forward"] == executions["output_backward"] == micro  # first and last stage only
    assert executions["pp_send_forward"] == executions["pp_send_backward"] == micro * 3
    assert executions["optimizer_step"] == 4 and executions["dp_gradient_all_reduce"] == 4
    assert {op.stage for op in graph.ops} == {0, 1, 2, 3}
