"""The profiler on a small module of the tests' own: phases, recompute, counts."""

import pytest
import torch
from compute_toy import toy_flop, toy_shard

from ddlsim.compute.counting import count_work
from ddlsim.compute.identity import local_identity
from ddlsim.compute.profiler import ProfileSettings, profile_shard
from ddlsim.compute.recompute import on_recompute
from ddlsim.core.errors import ConfigError
from ddlsim.core.types import Phase

SETTINGS = ProfileSettings(iterations=3, warmup=1)


def phases(measurement):
    return [phase.phase for phase in measurement.phases]


def test_phases_times_and_counts(one_thread):
    measurement = profile_shard(toy_shard(), local_identity("cpu"), SETTINGS)
    assert phases(measurement) == [Phase.FORWARD, Phase.BACKWARD, Phase.OPTIMIZER]
    assert measurement.run_precision == "fp32" and measurement.iterations == 3
    forward = measurement.phase("forward")
    assert forward.counted_flop == toy_flop(4, 64, 256, 32)
    assert measurement.phase("backward").counted_flop == 2 * forward.counted_flop
    for phase in measurement.phases:
        assert phase.time_s > 0 and phase.kernels > 0 and phase.counted_bytes > 0
        assert phase.wall_time_s >= phase.time_s * 0.5
    assert forward.achieved_flop_per_s == pytest.approx(forward.counted_flop / forward.time_s)


@pytest.mark.parametrize("reentrant", [False, True])
def test_recompute_is_measured_separately(one_thread, reentrant):
    measurement = profile_shard(toy_shard(checkpointing=True, reentrant=reentrant), local_identity("cpu"), SETTINGS)
    assert phases(measurement) == [Phase.FORWARD, Phase.RECOMPUTE, Phase.BACKWARD, Phase.OPTIMIZER]
    recompute = measurement.phase("recompute")
    assert recompute.time_s > 0 and recompute.kernels > 0
    # What the recompute re-runs is a part of the forward, never more; backward keeps its own 2x.
    assert 0 < recompute.counted_flop <= measurement.phase("forward").counted_flop
    assert measurement.phase("backward").counted_flop == 2 * toy_flop(4, 64, 256, 32)


def test_patches_are_undone():
    import torch.utils.checkpoint as checkpoint_module

    before = (checkpoint_module._run_fn_with_dynamo_disabled, checkpoint_module.CheckpointFunction.__dict__["forward"])
    with on_recompute(lambda run: run()) as hook:
        assert hook.supported
    after = (checkpoint_module._run_fn_with_dynamo_disabled, checkpoint_module.CheckpointFunction.__dict__["forward"])
    assert before == after


def test_counting_a_matrix_product():
    a, b = torch.ones(8, 16), torch.ones(16, 4)
    with count_work() as count:
        a @ b
    assert count.flop == 2 * 8 * 16 * 4
    assert count.bytes == 4 * (8 * 16 + 16 * 4 + 8 * 4)


def test_settings_are_checked():
    with pytest.raises(ConfigError, match="iterations"):
        ProfileSettings(iterations=0)


def test_minimum_statistic_for_shared_machines(one_thread):
    measurement = profile_shard(toy_shard(), local_identity("cpu"),
                                ProfileSettings(iterations=4, warmup=1, statistic="min"))
    assert measurement.statistic == "min"
    for phase in measurement.phases:
        assert phase.time_s == phase.time_min_s <= phase.time_median_s <= phase.time_mean_s + phase.time_std_s * 2
    with pytest.raises(ConfigError, match="statistic"):
        ProfileSettings(statistic="mean")


def test_gpu_trace_parsing_on_a_synthetic_trace():
    """The CUDA branch of the event parser, on hand-made events (no GPU needed)."""
    from types import SimpleNamespace

    from torch.autograd import DeviceType

    from ddlsim.compute.profiler import _windows_and_activities

    def event(name, device, start, end, annotation=False):
        return SimpleNamespace(name=name, device_type=device, is_user_annotation=annotation, cpu_parent=None,
                               time_range=SimpleNamespace(start=start, end=end))

    events = [
        event("ddlsim::forward#0", DeviceType.CPU, 0, 100, True),
        event("ddlsim::forward#0", DeviceType.CUDA, 5, 95, True),      # the GPU-side copy of the window
        event("aten::mm", DeviceType.CPU, 1, 4),                       # host op: not device time on a GPU
        event("ampere_sgemm_128x64_nn", DeviceType.CUDA, 10, 40),
        event("Optimizer.step#Adam.step", DeviceType.CUDA, 20, 30, True),
        event("Memset (Device)", DeviceType.CUDA, 50, 52),
    ]
    windows, activities = _windows_and_activities(events, cuda=True)
    assert [(w.phase, w.iteration) for w in windows] == [("forward", 0)]
    assert [(a.start_us, a.end_us) for a in activities] == [(10, 40), (50, 52)]
