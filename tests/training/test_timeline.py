"""The iteration timeline on hand-built workloads, against times worked out by hand."""

import math

import pytest
from training_fakes import DP, TP, collective, compute, layered_workload, pricer

from ddlsim.core.errors import ConfigError
from ddlsim.core.types import CollectiveOp, Phase
from ddlsim.core.work import TaskBlock, Workload
from ddlsim.training import Overlap, TrainingSettings, build_graph, simulate_training
from ddlsim.training.buckets import find_gradient_sync
from ddlsim.training.graph import DP_STREAM, IterationGraph
from ddlsim.training.schedules.dispatch import register_schedule
from ddlsim.training.timeline import place

NO_OVERLAP = TrainingSettings(overlap=Overlap.NONE)
BUCKETED = TrainingSettings(overlap=Overlap.DP_BACKWARD, bucket_size_bytes=25)


def test_without_overlap_iteration_is_compute_plus_communication():
    # 4 layers: forward 1 s, backward 2 s, two 10-byte TP all-reduces of 0.1 s each per layer and
    # direction; a 100-byte DP all-reduce of 1 s; an optimizer step of 0.5 s.
    result = simulate_training(layered_workload(), pricer(), NO_OVERLAP)
    it = result.iteration
    assert it.compute_time_s == pytest.approx(12.5)
    assert it.comm_time_s == pytest.approx(2.6)
    assert it.iteration_time_s == pytest.approx(15.1)
    assert it.exposed_comm_time_s == pytest.approx(2.6)
    assert it.hidden_comm_time_s == pytest.approx(0.0, abs=1e-12)
    assert it.comm_fraction == pytest.approx(2.6 / 15.1)


def test_bucketed_overlap_hides_dp_buckets_behind_later_layers():
    # Four 25-byte buckets of 0.25 s; bucket j is ready when backward layer j ends, at
    # 4.8 + 2.2 j + 2 s. The last one ends at 13.65 s, after the compute stream's 13.6 s, so the
    # optimizer runs from 13.65 s to 14.15 s.
    result = simulate_training(layered_workload(), pricer(), BUCKETED)
    it = result.iteration
    assert it.iteration_time_s == pytest.approx(14.15)
    assert it.exposed_comm_time_s == pytest.approx(1.65)
    assert it.hidden_comm_time_s == pytest.approx(0.95)
    graph = build_graph(layered_workload(), pricer(), BUCKETED)
    placement = place(graph)
    buckets = [op for op in graph.ops if op.stream == DP_STREAM]
    assert [placement.start_s[op.index] for op in buckets] == pytest.approx([6.8, 9.0, 11.2, 13.4])
    assert sum(op.task.size_bytes for op in buckets) == 100


def test_bucket_latency_is_paid_per_bucket():
    # With 0.5 s of latency per collective the buckets still hide behind backward, but the
    # TP all-reduces cost 0.6 s each: iteration 22.1 s against 23.6 s without overlap.
    overlapped = simulate_training(layered_workload(), pricer(alpha_s=0.5), BUCKETED).iteration
    plain = simulate_training(layered_workload(), pricer(alpha_s=0.5), NO_OVERLAP).iteration
    assert plain.iteration_time_s == pytest.approx(23.6)
    assert overlapped.iteration_time_s == pytest.approx(22.1)


def test_small_buckets_on_one_layer_are_slower_than_no_overlap():
    # One backward layer, ending at 4.2 s: all ten 10-byte buckets are ready then and each pays
    # 0.5 s of latency (0.6 s each), so the optimizer starts at 10.2 s; without overlap one
    # 1.5 s all-reduce follows the TP all-reduces (5.4 s) and the iteration ends at 7.4 s.
    workload = layered_workload(layers=1)
    overlapped = simulate_training(workload, pricer(alpha_s=0.5), TrainingSettings(Overlap.DP_BACKWARD, 10))
    plain = simulate_training(workload, pricer(alpha_s=0.5), NO_OVERLAP)
    assert plain.iteration.iteration_time_s == pytest.approx(7.4)
    assert overlapped.iteration.iteration_time_s == pytest.approx(10.7)


def test_one_bucket_for_the_whole_gradient_equals_no_overlap():
    workload = layered_workload(tp_bytes=0)
    # (TP all-reduces of 0 bytes and no latency, so nothing else follows the last backward task)
    one_bucket = simulate_training(workload, pricer(), TrainingSettings(Overlap.DP_BACKWARD, 10**6))
    plain = simulate_training(workload, pricer(), NO_OVERLAP)
    assert one_bucket.iteration.iteration_time_s == pytest.approx(plain.iteration.iteration_time_s)


def test_time_to_accuracy_throughput_and_plan_columns():
    result = simulate_training(layered_workload(num_steps=1000, global_batch=64), pricer(), NO_OVERLAP)
    assert result.time_to_accuracy_s == pytest.approx(1000 * 15.1)
    assert result.samples_per_s == pytest.approx(64 / 15.1)
    row = result.row()
    assert row["num_steps"] == 1000 and row["tp_degree"] == 2 and row["dp_degree"] == 4
    assert "plan_num_steps" not in row
    no_steps = simulate_training(layered_workload(num_steps=0), pricer(), NO_OVERLAP)
    assert math.isnan(no_steps.time_to_accuracy_s)


def test_per_collective_breakdown_adds_up():
    result = simulate_training(layered_workload(), pricer(alpha_s=0.01, reduction_share=0.25), BUCKETED)
    row = result.row()
    keys = {item.key for item in result.iteration.collectives}
    assert keys == {"tp_fwd", "tp_bwd", "dp_grad"}
    assert sum(row[f"comm_{key}_time_s"] for key in keys) == pytest.approx(row["comm_time_s"])
    for key in keys:
        parts = row[f"comm_{key}_latency_s"] + row[f"comm_{key}_transfer_s"] + row[f"comm_{key}_compute_s"]
        assert parts == pytest.approx(row[f"comm_{key}_time_s"])
    assert row["comm_tp_fwd_calls"] == 8 and row["comm_dp_grad_calls"] == 4
    assert row["comm_reduction_s"] > 0 and row["comm_tp_fwd_algorithm"] == "fake_ring"


def test_compute_sources_are_reported_not_mixed_silently():
    workload = layered_workload()
    blocks = (*workload.blocks[:-1], TaskBlock("optimizer", (compute("adam_roofline", Phase.OPTIMIZER, 0.5),)))
    mixed = Workload("toy", 8, blocks, global_batch=64, num_steps=10)
    assert simulate_training(workload, pricer()).iteration.compute_source == "measured"
    assert simulate_training(mixed, pricer()).row()["compute_source"] == "measured+roofline"
    assert simulate_training(mixed, pricer()).row()["compute_device"] == "fake_gpu"


def test_collectives_inside_backward_blocks_are_not_gradient_sync():
    # DLRM-like: the backward all-to-all sits between backward tasks; the dense all-reduce follows.
    blocks = (
        TaskBlock("forward", (compute("mlp_fwd", Phase.FORWARD, 1.0),
                              collective("emb_a2a_fwd", CollectiveOp.ALL_TO_ALL, 50, DP))),
        TaskBlock("backward", (compute("top_bwd", Phase.BACKWARD, 1.0),
                               collective("emb_a2a_bwd", CollectiveOp.ALL_TO_ALL, 50, DP, Phase.BACKWARD),
                               compute("bottom_bwd", Phase.BACKWARD, 1.0))),
        TaskBlock("dense_sync", (collective("dense_ar", CollectiveOp.ALL_REDUCE, 40, DP, Phase.BACKWARD),
                                 collective("stats", CollectiveOp.ALL_GATHER, 8, DP, Phase.BACKWARD))),
        TaskBlock("optimizer", (compute("sgd", Phase.OPTIMIZER, 0.1),)),
    )
    workload = Workload("dlrm_like", 8, blocks)
    sync = find_gradient_sync(workload)
    assert sync is not None and [call.name for call in sync.calls] == ["dense_ar"]
    assert find_gradient_sync(layered_workload()).calls[0].name == "dp_grad"


def test_workload_without_backward_has_nothing_to_overlap():
    blocks = (TaskBlock("forward", (compute("fwd", Phase.FORWARD, 1.0),
                                    collective("ar", CollectiveOp.ALL_REDUCE, 100, TP))),)
    workload = Workload("inference", 8, blocks)
    assert find_gradient_sync(workload) is None
    assert simulate_training(workload, pricer(), BUCKETED).iteration.iteration_time_s == pytest.approx(2.0)


def test_too_many_buckets_is_a_config_error():
    with pytest.raises(ConfigError, match="training.bucket_size"):
        simulate_training(layered_workload(dp_bytes=10**6), pricer(), TrainingSettings(Overlap.DP_BACKWARD, 1))


def test_long_backward_blocks_are_expanded_in_chunks():
    # 3000 layers are placed as 1024 chunks; the total is unchanged.
    workload = layered_workload(layers=3000, tp_bytes=0)
    graph = build_graph(workload, pricer(), BUCKETED)
    backward = [op for op in graph.ops if op.label.startswith("backward") and op.kind == "compute"]
    assert len(backward) == 1024 and sum(op.executions for op in backward) == 3000
    plain = simulate_training(workload, pricer(), NO_OVERLAP).iteration
    assert simulate_training(workload, pricer(), BUCKETED).iteration.compute_time_s == pytest.approx(
        plain.compute_time_s)


def test_a_registered_schedule_plugs_in():
    @register_schedule("test_everything_in_parallel")
    def parallel(workload, pricer_, settings):
        graph = IterationGraph()
        for task in workload.compute_tasks():
            graph.add_compute(task, pricer_.compute(task), stream=task.name)
        return graph

    settings = TrainingSettings(schedule="test_everything_in_parallel")
    assert simulate_training(layered_workload(), pricer(), settings).iteration.iteration_time_s == pytest.approx(2.0)
    with pytest.raises(ConfigError, match="training.schedule"):
        simulate_training(layered_workload(), pricer(), TrainingSettings(schedule="nope"))


def test_settings_validate_and_parse_units():
    from ddlsim.training import TrainingConfig

    settings = TrainingSettings.from_config(TrainingConfig(overlap="dp_backward", bucket_size="25MiB"))
    assert settings.overlap is Overlap.DP_BACKWARD and settings.bucket_size_bytes == 25 * 2**20
    with pytest.raises(ConfigError, match="overlap = 'sometimes'"):
        TrainingSettings(overlap="sometimes")
    with pytest.raises(ConfigError, match="bucket_size"):
        TrainingSettings.from_config(TrainingConfig(bucket_size="0B"))


def test_same_inputs_same_numbers_bit_for_bit():
    first = simulate_training(layered_workload(), pricer(alpha_s=1e-3), BUCKETED).row()
    second = simulate_training(layered_workload(), pricer(alpha_s=1e-3), BUCKETED).row()
    assert first == second
