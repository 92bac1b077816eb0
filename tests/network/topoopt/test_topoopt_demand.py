"""A workload's inter-server traffic (TopologyFinder inputs) and its phases for reconfigurable fabrics."""

from __future__ import annotations

import numpy as np
import pytest

from ddlsim.core.types import CollectiveCall, CollectiveOp, GroupLayout, Phase
from ddlsim.core.work import ComputeTask, ShardSignature, TaskBlock, Workload
from ddlsim.network.fabrics.topoopt.demand import call_pairs, server_layout, server_traffic
from ddlsim.training.reconfiguration import iteration_phases as workload_phases

SIGNATURE = ShardSignature("toy", (("width", 1),), 1)


def _workload() -> Workload:
    dp = CollectiveCall(CollectiveOp.ALL_REDUCE, 800, GroupLayout(8), Phase.BACKWARD, "dp")
    a2a = CollectiveCall(CollectiveOp.ALL_TO_ALL, 80, GroupLayout(8), Phase.FORWARD, "a2a", count=2)
    forward = ComputeTask("forward", Phase.FORWARD, SIGNATURE, 1.0)
    backward = ComputeTask("backward", Phase.BACKWARD, SIGNATURE, 2.0)
    blocks = (TaskBlock("forward", (forward, a2a), repeat=2), TaskBlock("backward", (backward, backward, dp)))
    return Workload("toy", 8, blocks)


def test_call_pairs_follow_each_op():
    src, dst, size = call_pairs(CollectiveCall(CollectiveOp.ALL_REDUCE, 800, GroupLayout(4, 2, 8)))
    assert src.tolist() == [0, 2, 4, 6, 1, 3, 5, 7] and dst.tolist() == [2, 4, 6, 0, 3, 5, 7, 1]
    assert size.tolist() == [2 * 3 / 4 * 800] * 8
    src, dst, size = call_pairs(CollectiveCall(CollectiveOp.ALL_TO_ALL, 80, GroupLayout(4)))
    assert len(src) == 12 and set(size.tolist()) == {20.0}
    src, dst, size = call_pairs(CollectiveCall(CollectiveOp.GATHER, 80, GroupLayout(4), root=1))
    assert set(dst.tolist()) == {1} and sorted(src.tolist()) == [0, 2, 3] and set(size.tolist()) == {20.0}
    src, dst, size = call_pairs(CollectiveCall(CollectiveOp.BROADCAST, 80, GroupLayout(4)))
    assert set(src.tolist()) == {0} and set(size.tolist()) == {80.0}


def test_server_layouts():
    assert server_layout(GroupLayout(8), 2) == GroupLayout(4, 1, 4)
    assert server_layout(GroupLayout(4, 2, 8), 2) == GroupLayout(4, 1, 4)
    assert server_layout(GroupLayout(2, 1, 8), 4) is None


def test_server_traffic_of_a_toy_workload():
    traffic = server_traffic(_workload(), 2)
    assert traffic.num_servers == 4
    # The GPU ring 0 -> 1 -> ... -> 7 -> 0 crosses servers at 1->2, 3->4, 5->6, 7->0.
    expected = np.zeros((4, 4))
    expected[[0, 1, 2, 3], [1, 2, 3, 0]] = 2 * 7 / 8 * 800
    assert np.allclose(traffic.allreduce_matrix, expected)
    assert traffic.allreduce == (traffic.allreduce[0],) and traffic.allreduce[0].layout == GroupLayout(4, 1, 4)
    # all-to-all: 2 x 2 GPU pairs per server pair, 80 / 8 bytes each, 2 calls x 2 repeats.
    assert np.allclose(traffic.mp_matrix[0, 1], 4 * 10 * 4) and traffic.mp_matrix[0, 0] == 0


def test_workload_phases_merge_compute_and_keep_call_order():
    times = {"forward": 0.5, "backward": 1.0}
    phases = workload_phases(_workload(), lambda task: times[task.name], 2, lambda call: 0.25)
    kinds = ["c" if p.demand is None else p.name for p in phases]
    # forward, a2a x 2 (each followed by its local time, merged with the compute after it), ...
    assert kinds == ["c", "a2a", "c", "a2a", "c", "a2a", "c", "a2a", "c", "dp", "c"]
    assert [p.compute_s for p in phases if p.demand is None] == pytest.approx([0.5, 0.25, 0.75, 0.25, 2.25, 0.25])
