"""The contended timeline (`ddlsim.training.contended`): collectives in flight at the same time share
the fabric; nothing changes when nothing overlaps; the rows and trace.json show the stretch."""

from __future__ import annotations

import numpy as np
import pytest
from training_fakes import DP, TP, collective, compute, layered_workload, pricer

import ddlsim
from ddlsim.core.errors import ConfigError
from ddlsim.core.types import CollectiveOp, Phase
from ddlsim.network import make_fabric
from ddlsim.network.contention.model import ContentionModel
from ddlsim.network.contention.resources import Demand
from ddlsim.training import TrainingSettings, simulate_training
from ddlsim.training.contended import collectives_overlap, place_contended, place_jobs
from ddlsim.training.graph import IterationGraph
from ddlsim.training.simulate import build_graph, placed
from ddlsim.training.timeline import place, summarize
from ddlsim.training.trace import trace_events

PRICER = pricer(bytes_per_s=100.0)


def nic_model(capacity_bps: float = 800.0) -> ContentionModel:
    """Every collective puts its bytes (8 bits each) on one shared NIC of `capacity_bps`: a
    100-byte collective priced at 100 bytes/s uses the whole NIC alone."""

    def demand_of(call) -> Demand:
        return Demand(np.array([0]), np.array([8.0 * call.size_bytes]))

    return ContentionModel(demand_of, np.array([capacity_bps]))


def two_streams(first_bytes: int = 100, second_bytes: int = 100, delay_flop: float = 0.0) -> IterationGraph:
    graph = IterationGraph()
    a = collective("first", CollectiveOp.ALL_REDUCE, first_bytes, DP)
    b = collective("second", CollectiveOp.ALL_GATHER, second_bytes, TP)
    graph.add_collective(a, PRICER.collective(a), stream="one")
    if delay_flop:
        graph.add_compute(compute("wait", Phase.FORWARD, delay_flop), PRICER.compute(compute("wait", Phase.FORWARD,
                                                                                            delay_flop)), stream="two")
    graph.add_collective(b, PRICER.collective(b), stream="two")
    return graph


def test_two_collectives_on_one_nic_at_once_each_take_twice_as_long():
    graph = two_streams()
    placement = place_contended(graph, nic_model())
    assert place(graph).makespan_s == pytest.approx(1.0)
    assert placement.end_s == pytest.approx((2.0, 2.0))
    summary = summarize(graph, placement)
    assert {item.key: item.slowdown for item in summary.collectives} == pytest.approx({"first": 2.0, "second": 2.0})
    assert {item.key: item.alone_s for item in summary.collectives} == pytest.approx({"first": 1.0, "second": 1.0})


def test_a_late_starter_shares_only_while_both_run():
    graph = two_streams(delay_flop=0.5)  # the second starts at 0.5 s
    placement = place_contended(graph, nic_model())
    # Alone 0.5 s of the first (half done), then half speed each: the first ends at 1.5 s; the
    # second has done 0.5 of 1 by then and ends at 2.0 s (300 bytes at 100 bytes/s after 0 s... in all).
    assert placement.end_s[0] == pytest.approx(1.5)
    assert placement.end_s[2] == pytest.approx(2.0)


def test_a_nic_wide_enough_for_both_changes_nothing():
    graph = two_streams()
    assert place_contended(graph, nic_model(capacity_bps=1600.0)).end_s == pytest.approx(place(graph).end_s)


def test_without_overlapping_collectives_the_isolated_placement_comes_back_bit_for_bit():
    graph = build_graph(layered_workload(), PRICER, TrainingSettings())
    isolated = place(graph)
    assert not collectives_overlap(graph, isolated)
    contended = place_contended(graph, nic_model())
    assert contended.start_s == isolated.start_s and contended.end_s == isolated.end_s
    assert contended.contended_s is None


def test_jobs_on_disjoint_resources_run_as_if_alone_for_every_iteration():
    graph = two_streams()
    model = nic_model()

    def own(offset):
        return lambda call: Demand(np.array([offset]), np.array([8.0 * call.size_bytes]))

    shared = ContentionModel(model.demand_of, np.array([1600.0, 1600.0]))
    runs = place_jobs([graph, graph], shared, iterations=3, demand_of=[own(0), own(1)])
    for job in runs:
        assert len(job) == 3
        for placement in job:
            assert placement.makespan_s == pytest.approx(1.0)


@pytest.mark.parametrize("fabric_name", ["superpod", "topoopt_fat_tree_oversub", "torus2d"])
def test_overlap_none_gives_todays_numbers_and_contention_never_speeds_an_iteration_up(fabric_name):
    fabric = make_fabric(fabric_name)
    session_rows = {}
    for overlap in ("none", "dp_backward", "fsdp_prefetch", "tp_comm", "all"):
        for contention in (False, True):
            settings = TrainingSettings(overlap=overlap, contention=contention)
            workload = ddlsim_llama_workload()
            result = simulate_training(workload, llama_pricer(fabric), settings, fabric=fabric)
            session_rows[(overlap, contention)] = result.row()
    for overlap in ("none", "dp_backward", "fsdp_prefetch", "tp_comm", "all"):
        off, on = session_rows[(overlap, False)], session_rows[(overlap, True)]
        if overlap == "none":
            assert on == off
            continue
        assert on["iteration_time_s"] >= off["iteration_time_s"] * (1 - 1e-12)
        assert on["exposed_comm_time_s"] >= off["exposed_comm_time_s"] - 1e-12 * off["iteration_time_s"]
        assert "comm_alone_time_s" not in off
        if overlap in ("fsdp_prefetch", "all"):  # prefetched gathers overlap the reduce-scatters
            assert on["comm_alone_time_s"] <= on["comm_time_s"] * (1 + 1e-12)
    # The overlaps hide communication behind compute: FSDP prefetch and TP overlap beat none.
    assert session_rows[("all", True)]["iteration_time_s"] < session_rows[("none", True)]["iteration_time_s"]


_WORKLOAD = {}


def ddlsim_llama_workload():
    if "llama" not in _WORKLOAD:
        import ddlsim.workload.models  # noqa: F401
        from ddlsim.core.registry import MODELS
        from ddlsim.workload.parallel import ParallelConfig

        model = MODELS.make("hf", config="llama3_8b", global_batch=64)
        _WORKLOAD["llama"] = model.build_workload(ParallelConfig(tensor=8, data=16, zero=3, sequence_parallel=True),
                                                  80 * 2**30)
    return _WORKLOAD["llama"]


def llama_pricer(fabric):
    from ddlsim.compute.devices import DeviceConfig, DeviceSpec
    from ddlsim.compute.model import ComputeConfig, ComputeModel
    from ddlsim.training import Pricer
    from ddlsim.training.run import compute_timer, network_timer, reduction_model

    device = DeviceSpec.from_config(DeviceConfig(name="h100_sxm"))
    return Pricer(network_timer(fabric, "best", reduction_model(device)),
                  compute_timer(ComputeModel.from_config(ComputeConfig(), device)))


def test_trace_shows_the_stretched_transfers():
    graph = two_streams()
    placement = place_contended(graph, nic_model())
    events = [event for event in trace_events(graph, placement)["traceEvents"] if event.get("ph") == "X"]
    for event in events:
        assert event["dur"] == pytest.approx(2.0e6)
        assert event["args"]["alone_s"] == pytest.approx(1.0)
        assert event["args"]["slowdown"] == pytest.approx(2.0)


def test_placed_keeps_the_isolated_timeline_when_contention_is_off():
    graph = two_streams()
    fabric = make_fabric("superpod")
    off = placed(graph, TrainingSettings(contention=False), fabric, captured=True)
    assert off.contended_s is None and off.end_s == place(graph).end_s


def test_an_unknown_contention_setting_is_one_line_naming_the_key():
    with pytest.raises(ConfigError) as error:
        ddlsim.run(["experiment=single", "network.contention=maybe"])
    assert "network.contention" in str(error.value) and "\n" not in str(error.value)


def test_a_pipeline_too_large_to_lay_out_is_summed_up_alone_with_a_warning():
    from training_fakes import pipelined

    from ddlsim.training.simulate import MAX_CONTENDED_STEPS, ContentionSkipped

    workload = pipelined(stages=4, micro=MAX_CONTENDED_STEPS // 4 + 1, send_bytes=10, dp_bytes=100)
    fabric = make_fabric("ideal")
    off = simulate_training(workload, PRICER, TrainingSettings(overlap="dp_backward", contention=False), fabric=fabric)
    with pytest.warns(ContentionSkipped, match="network.contention"):
        on = simulate_training(workload, PRICER, TrainingSettings(overlap="dp_backward"), fabric=fabric)
    assert on.row() == off.row()
