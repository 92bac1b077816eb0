"""Concurrency cases on which the fluid engine is checked against SimGrid (issue 23, item 3).

Each case is a small fabric (at most 64 nodes) and two to four collectives whose explicit
schedules run at the same time: collectives on the same NICs, TP beside DP on a non-blocking
and a 4:1 oversubscribed fat-tree, all-to-all beside all-reduce on a 2D torus, groups sharing
TopoOpt's host-forwarded optical links and OPSquare's transceivers, jobs that start apart, and
paths that cross one link twice (`hairpin.OneArmedRouter`).
`tests/validation/test_simgrid_reference.py` asserts agreement on every case and
`scripts/contention_reference_table.py` prints the table for docs/contention.md.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from ddlsim.core.registry import ALGORITHMS, FABRICS
from ddlsim.core.types import CollectiveOp, GroupLayout
from ddlsim.network.collectives.base import ScheduleRequest
from ddlsim.network.contention.flows import FlowJob
from ddlsim.network.fabrics.base import Fabric
from ddlsim.network.placement import Placement
from ddlsim.validation.hairpin import OneArmedRouter

MB = 1 << 20


def _fabrics() -> dict[str, Callable[[], Fabric]]:
    return {
        "ideal": lambda: FABRICS.make("ideal", num_nodes=32, bandwidth="100Gbps", latency="1us"),
        "fat_tree": lambda: FABRICS.make("superpod", num_nodes=64, gpus_per_node=4, tier_sizes=[16, 64],
                                         tier_propagation=["50ns", "1us"], oversubscription=[1.0]),
        "fat_tree_4to1": lambda: FABRICS.make("superpod", num_nodes=64, gpus_per_node=4, tier_sizes=[16, 64],
                                              tier_propagation=["50ns", "1us"], oversubscription=[4.0]),
        "torus2d": lambda: FABRICS.make("torus2d", dims=[4, 4], node_bandwidth="400Gbps",
                                        propagation=["1us", "1us"], io_latency="100ns"),
        "torus2d_8x8": lambda: FABRICS.make("torus2d", dims=[8, 8], node_bandwidth="400Gbps",
                                            propagation=["1us", "1us"], io_latency="100ns"),
        "topoopt": lambda: FABRICS.make("topoopt", num_servers=16, gpus_per_server=1, degree=4),
        "topoopt_2gpu": lambda: FABRICS.make("topoopt", num_servers=16, gpus_per_server=2, degree=4),
        "opsquare": lambda: FABRICS.make("opsquare", num_pods=4, pod_size=4, num_groups=2,
                                         channel_bandwidth="400Gbps"),
        "one_armed_router": lambda: OneArmedRouter(bandwidth_bps=100e9, latency_s=1e-6, num_nodes=16,
                                                   trunk_bps=200e9),
    }


FABRIC_BUILDERS = _fabrics()


def collective(fabric: Fabric, algorithm: str, op: str, where: GroupLayout | Sequence[int], size_bytes: int,
               start_s: float = 0.0) -> FlowJob:
    """A FlowJob running `algorithm`'s explicit schedule of `op` on every group of a layout, or on
    one group of the listed fabric nodes."""
    if isinstance(where, GroupLayout):
        layout, placement = where, fabric.place(where.job_ranks)
    else:
        nodes = np.asarray(where, dtype=np.int64)
        layout, placement = GroupLayout(nodes.size), Placement(nodes.size, nodes)
    request = ScheduleRequest(CollectiveOp(op), layout.size, 0, size_bytes, fabric, layout, placement)
    schedule = ALGORITHMS.make(algorithm).explicit(request)
    label = f"{algorithm} {op}"
    if isinstance(where, GroupLayout):
        label += f" {layout.size}x{layout.num_groups}" + (f" stride {layout.stride}" if layout.stride > 1 else "")
    else:
        label += f" on {nodes.size} nodes"
    if start_s:
        label += f" at {start_s * 1e6:g} us"
    return FlowJob(schedule, size_bytes, layout if isinstance(where, GroupLayout) else nodes[None, :],
                   start_s, label, placement if isinstance(where, GroupLayout) else None)


@dataclass(frozen=True)
class Case:
    name: str
    fabric: str
    jobs: Callable[[Fabric], list[FlowJob]]

    def build(self) -> tuple[Fabric, list[FlowJob]]:
        fabric = FABRIC_BUILDERS[self.fabric]()
        return fabric, self.jobs(fabric)


def _layout(size: int, stride: int, ranks: int) -> GroupLayout:
    return GroupLayout(size, stride, ranks)


EVEN, ODD = list(range(0, 16, 2)), list(range(1, 16, 2))
HALF_LEAVES = [node for node in range(64) if node % 16 < 8]
OTHER_HALF_LEAVES = [node for node in range(64) if node % 16 >= 8]
CASES: tuple[Case, ...] = (
    # -- two collectives on the same NICs (ideal switch) --
    Case("same_nics_allreduce_allgather", "ideal", lambda f: [
        collective(f, "ring", "all_reduce", _layout(16, 1, 16), 16 * MB),
        collective(f, "ring", "all_gather", _layout(16, 1, 16), 8 * MB)]),
    Case("same_nics_ring_rhd_staggered", "ideal", lambda f: [
        collective(f, "ring", "all_reduce", _layout(16, 1, 16), 16 * MB),
        collective(f, "rhd", "all_reduce", _layout(16, 1, 16), 16 * MB, 2e-3)]),
    Case("same_nics_alltoall_allreduce", "ideal", lambda f: [
        collective(f, "direct", "all_to_all", _layout(8, 1, 8), 8 * MB),
        collective(f, "ring", "all_reduce", _layout(8, 1, 8), 8 * MB)]),
    Case("overlapping_groups_three_ops", "ideal", lambda f: [
        collective(f, "ring", "reduce_scatter", list(range(0, 16)), 12 * MB),
        collective(f, "bruck", "all_gather", list(range(8, 24)), 6 * MB),
        collective(f, "binary_tree", "broadcast", list(range(4, 20)), 4 * MB, 5e-4)]),
    Case("disjoint_groups_no_sharing", "ideal", lambda f: [
        collective(f, "ring", "all_reduce", list(range(0, 16)), 8 * MB),
        collective(f, "rhd", "all_reduce", list(range(16, 32)), 8 * MB)]),
    # -- fat-trees: TP beside DP, non-blocking and 4:1 --
    Case("tp_dp_nonblocking", "fat_tree", lambda f: [
        collective(f, "ring", "all_reduce", _layout(8, 1, 64), 32 * MB),
        collective(f, "ring", "all_reduce", _layout(8, 8, 64), 32 * MB)]),
    Case("tp_dp_4to1", "fat_tree_4to1", lambda f: [
        collective(f, "ring", "all_reduce", _layout(8, 1, 64), 32 * MB),
        collective(f, "ring", "all_reduce", _layout(8, 8, 64), 32 * MB)]),
    Case("tp_ag_dp_rs_4to1", "fat_tree_4to1", lambda f: [
        collective(f, "ring", "all_gather", _layout(8, 1, 64), 16 * MB),
        collective(f, "rhd", "reduce_scatter", _layout(8, 8, 64), 64 * MB)]),
    Case("tp_dp_ep_4to1", "fat_tree_4to1", lambda f: [
        collective(f, "ring", "all_reduce", _layout(4, 1, 64), 16 * MB),
        collective(f, "hierarchical", "all_reduce", _layout(16, 4, 64), 32 * MB),
        collective(f, "direct", "all_to_all", _layout(8, 2, 64), 8 * MB, 1e-3)]),
    Case("same_nics_rhd_ring_rs", "fat_tree", lambda f: [
        collective(f, "rhd", "all_reduce", _layout(16, 4, 64), 16 * MB),
        collective(f, "ring", "reduce_scatter", _layout(16, 4, 64), 16 * MB)]),
    Case("three_jobs_one_gpu_per_node_4to1", "fat_tree_4to1", lambda f: [
        collective(f, "direct", "all_to_all", list(range(0, 64, 4)), 16 * MB),
        collective(f, "direct", "all_to_all", list(range(1, 64, 4)), 16 * MB),
        collective(f, "rhd", "all_reduce", list(range(2, 64, 4)), 32 * MB, 2e-4)]),
    Case("two_jobs_sharing_leaves_4to1", "fat_tree_4to1", lambda f: [
        collective(f, "rhd", "all_reduce", HALF_LEAVES, 32 * MB),
        collective(f, "ring", "all_reduce", OTHER_HALF_LEAVES, 32 * MB)]),
    # -- 2D torus: all-to-all beside all-reduce --
    Case("alltoall_beside_allreduce", "torus2d", lambda f: [
        collective(f, "direct", "all_to_all", _layout(16, 1, 16), 8 * MB),
        collective(f, "ring", "all_reduce", _layout(16, 1, 16), 16 * MB)]),
    Case("bruck_alltoall_beside_torus_allreduce", "torus2d", lambda f: [
        collective(f, "bruck", "all_to_all", _layout(16, 1, 16), 8 * MB),
        collective(f, "torus2d", "all_reduce", _layout(16, 1, 16), 16 * MB)]),
    Case("rows_beside_columns", "torus2d_8x8", lambda f: [
        collective(f, "ring", "all_reduce", _layout(8, 1, 64), 16 * MB),
        collective(f, "ring", "all_reduce", _layout(8, 8, 64), 16 * MB)]),
    Case("alltoall_beside_allreduce_columns", "torus2d_8x8", lambda f: [
        collective(f, "direct", "all_to_all", _layout(64, 1, 64), 8 * MB),
        collective(f, "rhd", "all_reduce", _layout(8, 8, 64), 16 * MB, 2e-4)]),
    # -- TopoOpt: groups sharing host-forwarded optical links --
    Case("topoopt_even_beside_odd", "topoopt", lambda f: [
        collective(f, "ring", "all_reduce", EVEN, 16 * MB),
        collective(f, "ring", "all_reduce", ODD, 16 * MB)]),
    Case("topoopt_alltoall_beside_allreduce", "topoopt", lambda f: [
        collective(f, "direct", "all_to_all", _layout(16, 1, 16), 8 * MB),
        collective(f, "topoopt_ring", "all_reduce", _layout(16, 1, 16), 16 * MB)]),
    Case("topoopt_two_dp_groups_share_interfaces", "topoopt_2gpu", lambda f: [
        collective(f, "ring", "all_reduce", list(range(0, 32, 2)), 16 * MB),
        collective(f, "rhd", "all_reduce", list(range(1, 32, 2)), 16 * MB, 1e-4),
        collective(f, "ring", "all_reduce", _layout(2, 1, 32), 4 * MB)]),
    # -- OPSquare: groups sharing transceivers and relays --
    Case("opsquare_pods_beside_whole", "opsquare", lambda f: [
        collective(f, "ring", "all_reduce", _layout(4, 1, 16), 16 * MB),
        collective(f, "ring", "all_reduce", _layout(16, 1, 16), 16 * MB)]),
    Case("opsquare_alltoall_beside_allreduce", "opsquare", lambda f: [
        collective(f, "direct", "all_to_all", _layout(16, 1, 16), 8 * MB),
        collective(f, "rhd", "all_reduce", _layout(16, 1, 16), 16 * MB)]),
    Case("opsquare_relayed_groups", "opsquare", lambda f: [
        collective(f, "ring", "all_gather", [0, 5, 10, 15], 8 * MB),
        collective(f, "ring", "all_gather", [1, 4, 11, 14], 8 * MB),
        collective(f, "direct", "all_to_all", [2, 7, 8, 13], 4 * MB, 1e-4)]),
    # -- paths that cross one link twice (a routed flow in and back out of its switch's trunk) --
    Case("hairpin_ring_beside_ring", "one_armed_router", lambda f: [
        collective(f, "ring", "all_reduce", [0, 1, 2, 3], 16 * MB),
        collective(f, "ring", "all_reduce", [4, 5, 6, 7], 16 * MB)]),
    Case("hairpin_alltoall_beside_crossing_ring", "one_armed_router", lambda f: [
        collective(f, "direct", "all_to_all", [0, 1, 2, 3, 4, 5], 8 * MB),
        collective(f, "ring", "all_reduce", [6, 8, 10, 12], 16 * MB, 5e-5)]),
)


def case_by_name(name: str) -> Case:
    return next(case for case in CASES if case.name == name)
