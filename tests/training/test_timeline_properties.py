"""Invariants of the timeline over random workloads and prices."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from training_fakes import layered_workload, pricer

from ddlsim.training import Overlap, TrainingSettings, simulate_training

workloads = st.builds(
    layered_workload,
    layers=st.integers(1, 40),
    forward_flop=st.floats(0.0, 10.0),
    backward_flop=st.floats(0.0, 20.0),
    tp_bytes=st.integers(0, 1000),
    dp_bytes=st.integers(0, 10**5),
    optimizer_flop=st.floats(0.0, 5.0),
)
overlaps = st.builds(TrainingSettings, overlap=st.sampled_from(list(Overlap)),
                     bucket_size_bytes=st.integers(500, 10**5))


@settings(max_examples=60, deadline=None)
@given(workload=workloads, training=overlaps, alpha_s=st.floats(0.0, 1.0))
def test_iteration_is_bounded_by_compute_and_serial_communication(workload, training, alpha_s):
    it = simulate_training(workload, pricer(alpha_s=alpha_s), training).iteration
    tolerance = 1e-9 * max(1.0, it.iteration_time_s)
    assert it.iteration_time_s >= it.compute_time_s - tolerance
    assert it.exposed_comm_time_s >= 0 and it.hidden_comm_time_s >= 0
    assert 0.0 <= it.comm_fraction <= 1.0
    if training.overlap is Overlap.NONE:
        assert it.iteration_time_s == pytest.approx(it.compute_time_s + it.comm_time_s, rel=1e-9, abs=1e-12)
    else:
        # Overlap can hide communication, never make the compute itself shorter.
        plain = simulate_training(workload, pricer(alpha_s=alpha_s), TrainingSettings()).iteration
        assert it.compute_time_s == pytest.approx(plain.compute_time_s)


@settings(max_examples=30, deadline=None)
@given(workload=workloads, bucket_size_bytes=st.integers(500, 10**5))
def test_without_latency_overlap_never_slows_an_iteration(workload, bucket_size_bytes):
    # With a pure bandwidth cost, splitting the DP all-reduce into buckets costs nothing extra,
    # and starting buckets early can only help.
    plain = simulate_training(workload, pricer(), TrainingSettings()).iteration
    overlapped = simulate_training(workload, pricer(), TrainingSettings(Overlap.DP_BACKWARD, bucket_size_bytes))
    assert overlapped.iteration.iteration_time_s <= plain.iteration_time_s * (1 + 1e-9) + 1e-12
