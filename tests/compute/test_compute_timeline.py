"""Attribution of device activities to phase windows (pure, no torch)."""

import pytest

from ddlsim.compute.timeline import Activity, PhaseSample, Window, attribute, summarise, union_length_us


def test_union_does_not_count_overlap_twice():
    assert union_length_us([(0, 10), (5, 15), (20, 25)]) == 20
    assert union_length_us([]) == 0


def test_recompute_nested_in_backward_is_its_own_phase():
    windows = [Window("forward", 0, 0, 100), Window("backward", 0, 100, 400), Window("recompute", 0, 150, 250),
               Window("optimizer", 0, 400, 450)]
    activities = [Activity(10, 60), Activity(110, 140), Activity(160, 200), Activity(200, 240), Activity(260, 390),
                  Activity(405, 445), Activity(500, 510)]  # the last one lies in no window
    samples = {sample.phase: sample for sample in attribute(windows, activities)}
    assert samples["forward"].busy_s == pytest.approx(50e-6) and samples["forward"].kernels == 1
    assert samples["recompute"].busy_s == pytest.approx(80e-6) and samples["recompute"].kernels == 2
    assert samples["backward"].busy_s == pytest.approx(160e-6) and samples["backward"].kernels == 2
    assert samples["backward"].wall_s == pytest.approx(200e-6)  # 300 us window less the 100 us recompute
    assert samples["optimizer"].kernels == 1


def test_summary_takes_the_median_over_iterations():
    samples = [PhaseSample("forward", i, busy, busy, 3) for i, busy in enumerate([1.0, 2.0, 100.0])]
    summary = summarise(samples)["forward"]
    assert summary.time_median_s == 2.0 and summary.time_min_s == 1.0
    assert summary.iterations == 3 and summary.kernels == 3
    assert summary.time_mean_s == pytest.approx(103 / 3)
