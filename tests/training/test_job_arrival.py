"""Jobs that arrive at offsets (`place_jobs(start_s=...)`) and run in steady state, and the seeded
random offsets of `task.arrival=random` (issue 33: TopoOpt Fig. 16's jobs are not in phase)."""

from __future__ import annotations

import numpy as np
import pytest
from training_fakes import DP, collective, pricer

from ddlsim.core.types import CollectiveOp
from ddlsim.network.contention.model import ContentionModel
from ddlsim.network.contention.resources import Demand
from ddlsim.training.contended import place_jobs
from ddlsim.training.graph import IterationGraph
from ddlsim.training.jobs import arrival_offsets_s

PRICER = pricer(bytes_per_s=100.0)


def one_call_graph() -> IterationGraph:
    """One 100-byte all-reduce: 1 s alone, the whole of `NIC` while it runs."""
    graph = IterationGraph()
    call = collective("reduce", CollectiveOp.ALL_REDUCE, 100, DP)
    graph.add_collective(call, PRICER.collective(call), stream="one")
    return graph


NIC = ContentionModel(lambda call: Demand(np.array([0]), np.array([8.0 * call.size_bytes])), np.array([800.0]))


def test_in_phase_jobs_share_the_nic_for_their_whole_iteration():
    runs = place_jobs([one_call_graph(), one_call_graph()], NIC, iterations=2)
    assert [placement.makespan_s for job in runs for placement in job] == pytest.approx([2.0] * 4)


def test_a_job_that_starts_later_shares_only_while_both_run():
    # Job 0 alone for 0.5 s (half done), then both at half speed: job 0 ends at 1.5 s. Job 1 does
    # half its work at half speed from 0.5 to 1.5 s, then the rest alone by 2.0 s: 1.5 s after its start.
    runs = place_jobs([one_call_graph(), one_call_graph()], NIC, iterations=1, start_s=[0.0, 0.5])
    assert runs[0][0].makespan_s == pytest.approx(1.5)
    assert runs[1][0].makespan_s == pytest.approx(1.5)
    assert runs[1][0].start_s == pytest.approx((0.0,))  # each iteration in its own time origin


def test_in_steady_state_a_finished_job_keeps_loading_the_fabric():
    # Job 0 has run its iteration at 1.5 s but keeps iterating, so job 1 shares the NIC throughout.
    runs = place_jobs([one_call_graph(), one_call_graph()], NIC, iterations=1, start_s=[0.0, 0.5], steady=True)
    assert runs[0][0].makespan_s == pytest.approx(1.5)
    assert runs[1][0].makespan_s == pytest.approx(2.0)
    assert [len(job) for job in runs] == [1, 1]  # the extra iterations are not recorded


def test_offsets_at_zero_and_not_steady_give_the_in_phase_placements_bit_for_bit():
    graphs = [one_call_graph(), one_call_graph()]
    plain = place_jobs(graphs, NIC, iterations=3)
    zeros = place_jobs(graphs, NIC, iterations=3, start_s=[0.0, 0.0])
    assert [[p.end_s for p in job] for job in plain] == [[p.end_s for p in job] for job in zeros]


def test_bad_offsets_are_refused():
    with pytest.raises(ValueError, match="start_s"):
        place_jobs([one_call_graph()], NIC, start_s=[-1.0])
    with pytest.raises(ValueError, match="start_s"):
        place_jobs([one_call_graph()], NIC, start_s=[0.0, 1.0])


def test_random_offsets_are_seeded_and_within_each_job_s_alone_iteration():
    alone = [0.1, 2.0, 30.0, 0.5]
    first = arrival_offsets_s(alone, "random", seed=3)
    assert first == arrival_offsets_s(alone, "random", seed=3)
    assert first != arrival_offsets_s(alone, "random", seed=4)
    assert all(0.0 <= offset < limit for offset, limit in zip(first, alone))
    assert arrival_offsets_s(alone, "together") is None
    with pytest.raises(ValueError, match="arrival"):
        arrival_offsets_s(alone, "staggered")
