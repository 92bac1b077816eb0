"""Five concurrency cases beside `contention_suite` (issue 33) on which the iteration model is checked
against flow level (`ddlsim.validation.link_check`): rings crossing one 4:1 leaf, an all-to-all
beside a ring all-reduce, a small all-reduce beside a large all-to-all, two data-parallel jobs
placed as `task=jobs` places them (``spread``, one 4-GPU server per slot) on shared leaf uplinks,
and pipeline stage-to-stage sends sharing a NIC with the next stage's data-parallel ring.
"""

from __future__ import annotations

from ddlsim.core.types import GroupLayout
from ddlsim.network.contention.job_placement import place_jobs_on_nodes
from ddlsim.validation.contention_suite import MB, Case, collective

# One GPU per 4-GPU server, alternating between leaf 0 (nodes 0-15) and leaf 1 (16-31): every hop
# of the ring crosses a leaf uplink.
ACROSS_LEAVES_A = [0, 16, 4, 20, 8, 24, 12, 28]
ACROSS_LEAVES_B = [1, 17, 5, 21, 9, 25, 13, 29]


def _spread_jobs(fabric) -> list:
    """Two 32-rank jobs as `task=jobs` places them with ``task.placement=spread`` (4-node slots)."""
    first, second = place_jobs_on_nodes(fabric.num_nodes, [32, 32], "spread", slot_nodes=4, domain_nodes=16)
    return [collective(fabric, "rhd", "all_reduce", first.nodes.tolist(), 32 * MB),
            collective(fabric, "ring", "all_reduce", second.nodes.tolist(), 32 * MB)]


ITERATION_CASES: tuple[Case, ...] = (
    Case("two_rings_crossing_one_4to1_leaf", "fat_tree_4to1", lambda f: [
        collective(f, "ring", "all_reduce", ACROSS_LEAVES_A, 16 * MB),
        collective(f, "ring", "all_reduce", ACROSS_LEAVES_B, 16 * MB)]),
    Case("alltoall_beside_ring_allreduce", "fat_tree", lambda f: [
        collective(f, "direct", "all_to_all", GroupLayout(16, 4, 64), 16 * MB),
        collective(f, "ring", "all_reduce", GroupLayout(16, 4, 64), 16 * MB)]),
    Case("small_allreduce_beside_large_alltoall", "ideal", lambda f: [
        collective(f, "direct", "all_to_all", GroupLayout(16, 1, 16), 64 * MB),
        collective(f, "ring", "all_reduce", GroupLayout(16, 1, 16), 1 * MB, 1e-4)]),
    Case("two_dp_jobs_spread_on_shared_uplinks_4to1", "fat_tree_4to1", _spread_jobs),
    Case("pipeline_sends_share_a_nic", "fat_tree_4to1", lambda f: [
        collective(f, "ring", "send_recv", [0, 16], 16 * MB),
        collective(f, "ring", "send_recv", [4, 20], 16 * MB),
        collective(f, "ring", "all_reduce", [16, 20, 32, 36], 16 * MB)]),
)
