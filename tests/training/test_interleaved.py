"""The interleaved 1F1B schedule: Megatron's order, its bubble, and 1F1B when v = 1."""

import pytest
from training_fakes import AlphaBeta, FlopTimer, pipelined

from ddlsim.errors import ConfigError
from ddlsim.training import Overlap, Pricer, TrainingSettings, build_graph, simulate_training
from ddlsim.training.interleaved import interleaved_order
from ddlsim.training.pipeline import one_f_one_b_order
from ddlsim.training.schedules import SCHEDULES, select_schedule


def interleaved(stages, virtual, micro, forward=1.0, backward=2.0, send_bytes=0, dp_bytes=0):
    return pipelined(stages, micro, forward, backward, send_bytes=send_bytes, dp_bytes=dp_bytes, virtual=virtual)


def run(workload, settings=None, bytes_per_s=1.0):
    return simulate_training(workload, Pricer(AlphaBeta(bytes_per_s=bytes_per_s), FlopTimer()),
                             settings or TrainingSettings())


@pytest.mark.parametrize(("stages", "virtual", "micro", "forward", "backward"), [
    (2, 2, 2, 1.0, 2.0), (4, 2, 4, 1.0, 2.0), (4, 2, 8, 1.0, 2.0), (4, 4, 8, 1.0, 1.0), (3, 2, 6, 2.0, 3.0),
    (8, 2, 16, 1.0, 2.0), (8, 4, 32, 1.0, 2.0), (2, 3, 4, 1.0, 2.0)])
def test_uniform_bubble_fraction_is_p_minus_one_over_v_m(stages, virtual, micro, forward, backward):
    # Narayanan et al. 2021, Sec. 2.2.2: with equal stages and free communication the bubble is
    # (p - 1)(F + B) / v, a fraction (p - 1) / (v m) of the ideal time m (F + B).
    result = run(interleaved(stages, virtual, micro, forward, backward))
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
    from ddlsim.registry import MODELS
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
        assert executions["pp_send_forward"] == 8 * (4 * virtual - 1)
    assert times[2] < times[1]
