"""Iterations on a fabric with per-flow routes: each collective's steps on the fabric's own links,
pipeline stages sharing the fabric (`ddlsim.training.contended` with `LinkDemand`)."""

from __future__ import annotations

import pytest
from training_fakes import collective

from ddlsim.core.types import CollectiveOp, GroupLayout
from ddlsim.network import make_fabric
from ddlsim.network.contention.link_demand import LinkDemand
from ddlsim.network.contention.model import contention_model
from ddlsim.training.contended import place_contended
from ddlsim.training.graph import IterationGraph
from ddlsim.training.run import network_timer
from ddlsim.training.timeline import place

MB = 1 << 20
STAGE = GroupLayout(2, 1, 2)            # a stage's in-stage group: its two ranks
PAIR = GroupLayout(2, 2, 4)             # stage s to stage s + 1 (the pipeline pair of 2-rank stages)


def _graph(fabric, calls: list[tuple[int, object]], deps: dict[int, tuple[int, ...]] | None = None) -> IterationGraph:
    """Each (stage, call) on its own stream, starting at 0 or after the ops `deps` names."""
    timer = network_timer(fabric, "ring")
    graph = IterationGraph()
    for index, (stage, call) in enumerate(calls):
        graph.add_collective(call, timer(call), stream=f"s{index}", stage=stage, deps=(deps or {}).get(index, ()))
    return graph


def test_the_model_of_a_routed_fabric_gives_per_step_link_loads():
    fabric = make_fabric("ideal", num_nodes=8)
    assert isinstance(contention_model(fabric).demand_of, LinkDemand)


def test_stages_run_on_their_own_nodes_so_equal_collectives_of_two_stages_do_not_meet():
    fabric = make_fabric("ideal", num_nodes=8)
    gather = collective("tp", CollectiveOp.ALL_GATHER, 8 * MB, STAGE)
    send = collective("send", CollectiveOp.SEND_RECV, 8 * MB, PAIR)
    graph = _graph(fabric, [(0, gather), (1, gather), (0, send)])
    placement = place_contended(graph, contention_model(fabric))
    alone = place(graph)
    # stage 0's gather (nodes 0, 1) and stage 1's (nodes 2, 3) share nothing; stage 0's send (0 -> 2,
    # 1 -> 3) shares the sending NICs with stage 0's gather and the receiving ones with stage 1's
    assert placement.contended_s is not None
    assert placement.contended_s[2] > graph.ops[2].duration_s * 1.2
    assert placement.contended_s[0] > graph.ops[0].duration_s * 1.2
    assert placement.contended_s[1] > graph.ops[1].duration_s * 1.2
    assert placement.makespan_s > alone.makespan_s


def test_with_the_send_after_them_the_stages_keep_their_isolated_times():
    fabric = make_fabric("ideal", num_nodes=8)
    gather = collective("tp", CollectiveOp.ALL_GATHER, 8 * MB, STAGE)
    send = collective("send", CollectiveOp.SEND_RECV, 8 * MB, PAIR)
    graph = _graph(fabric, [(0, gather), (1, gather), (0, send)], deps={2: (0, 1)})
    alone = place(graph)
    assert alone.start_s[1] < alone.end_s[0]  # the two stages' gathers overlap in time
    placement = place_contended(graph, contention_model(fabric))
    assert placement.end_s == alone.end_s  # on different nodes nothing slowed them: bit for bit


def test_two_collectives_on_the_same_nics_of_one_stage_share_them():
    fabric = make_fabric("ideal", num_nodes=8)
    gather = collective("tp", CollectiveOp.ALL_GATHER, 8 * MB, GroupLayout(8))
    graph = _graph(fabric, [(0, gather), (0, gather)])
    placement = place_contended(graph, contention_model(fabric))
    assert placement.contended_s[0] == pytest.approx(2 * graph.ops[0].duration_s, rel=0.05)


def test_a_pipelined_iteration_shares_the_fabric_between_stages_and_their_sends():
    from training_fakes import FlopTimer, pipelined

    from ddlsim.training import Pricer, TrainingSettings, simulate_training
    from ddlsim.training.simulate import build_graph, placed

    fabric = make_fabric("ideal", num_nodes=8)
    workload = pipelined(stages=4, micro=6, forward=2.0, backward=4.0, send_bytes=16 * MB, dp_bytes=64 * MB)
    pricer = Pricer(network_timer(fabric, "ring"), FlopTimer(flop_per_s=1000.0))
    settings = {contention: TrainingSettings(overlap="dp_backward", contention=contention)
                for contention in (False, True)}
    rows = {contention: simulate_training(workload, pricer, settings[contention], fabric=fabric).row()
            for contention in (False, True)}
    assert rows[True]["iteration_time_s"] > rows[False]["iteration_time_s"]
    graph = build_graph(workload, pricer, settings[True])
    placement = placed(graph, settings[True], fabric)
    slowed = {op.task.op for op in graph.ops
              if op.kind.value == "collective" and placement.time_of(op) > op.duration_s * 1.01}
    assert CollectiveOp.SEND_RECV in slowed  # a stage's send meets its stage's data-parallel ring on its NICs
