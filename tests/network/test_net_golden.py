"""Golden numbers: closed-form alpha-beta times on the ideal switch, step counts from the papers,
and the latency and bandwidth of single flows on each electrical fabric (RAMP 7.5, OPSquare)."""

from __future__ import annotations

import numpy as np
import pytest

from ddlsim.core.types import GroupLayout
from ddlsim.network import estimate_collective, make_fabric
from ddlsim.network.patterns import Mesh, Pairs
from ddlsim.network.reduction import ReductionModel

ALPHA = 1e-6
BANDWIDTH = 400e9
BETA = 8 / BANDWIDTH
SIZE = 10**9
IDEAL = make_fabric("ideal", bandwidth="400Gbps", latency="1us", num_nodes=4096)


def ideal(op: str, n: int, algorithm: str, size: int = SIZE, device=None):
    return estimate_collective(op, size, n, IDEAL, algorithm, device=device)


@pytest.mark.parametrize("n", [2, 5, 16, 1000, 1024])
def test_ring_all_reduce_is_2_n_minus_1_steps_of_size_over_n(n):
    result = ideal("all_reduce", n, "ring")
    assert result.num_steps == 2 * (n - 1)
    assert result.latency_s == pytest.approx(2 * (n - 1) * ALPHA, rel=1e-12)
    assert result.transfer_s == pytest.approx(2 * (n - 1) * SIZE / n * BETA, rel=1e-12)
    assert result.compute_s == 0


def test_ring_reduce_scatter_and_all_gather_are_half_of_it():
    for op in ("reduce_scatter", "all_gather"):
        result = ideal(op, 64, "ring")
        assert result.num_steps == 63
        assert result.time_s == pytest.approx(63 * (ALPHA + SIZE / 64 * BETA), rel=1e-12)


@pytest.mark.parametrize("k", [1, 4, 10])
def test_rabenseifner_all_reduce_on_a_power_of_two(k):
    n = 2**k
    result = ideal("all_reduce", n, "rhd")
    assert result.num_steps == 2 * k
    assert result.time_s == pytest.approx(2 * k * ALPHA + 2 * (n - 1) / n * SIZE * BETA, rel=1e-12)


def test_rhd_on_a_non_power_of_two_folds_first():
    # n = 12: fold 2i -> 2i+1 (whole buffer), halving/doubling on 8, unfold (whole buffer).
    result = ideal("all_reduce", 12, "rhd")
    assert result.num_steps == 2 + 2 * 3


def test_binary_tree_all_reduce_complete_tree():
    n, height = 1023, 9  # a complete heap: every parent has two children
    result = ideal("all_reduce", n, "binary_tree")
    assert result.num_steps == 2 * height
    assert result.time_s == pytest.approx(2 * height * (ALPHA + 2 * SIZE * BETA), rel=1e-12)


def test_binary_tree_all_reduce_on_1024_is_wrht_table_1():
    # WRHT Table 1: BT needs 2 ceil(log2 N) = 20 steps at N = 1024; the last level holds one node.
    result = ideal("all_reduce", 1024, "binary_tree")
    assert result.num_steps == 20
    expected = 2 * (9 * (ALPHA + 2 * SIZE * BETA) + (ALPHA + SIZE * BETA))
    assert result.time_s == pytest.approx(expected, rel=1e-12)


def test_double_binary_tree_halves_the_per_step_bytes():
    single = ideal("all_reduce", 1024, "binary_tree")
    double = ideal("all_reduce", 1024, "double_binary_tree")
    assert double.transfer_s < 0.6 * single.transfer_s


def test_direct_mesh_all_reduce_is_sipac_table_2_mesh():
    n = 64
    result = ideal("all_reduce", n, "direct")
    assert result.num_steps == 2
    assert result.time_s == pytest.approx(2 * ALPHA + 2 * (n - 1) / n * SIZE * BETA, rel=1e-12)


def test_direct_and_bruck_all_to_all():
    n = 256
    assert ideal("all_to_all", n, "direct").time_s == pytest.approx(ALPHA + (n - 1) / n * SIZE * BETA, rel=1e-12)
    bruck = ideal("all_to_all", n, "bruck")
    assert bruck.num_steps == 8
    assert bruck.transfer_s == pytest.approx(8 * SIZE / 2 * BETA, rel=1e-12)


def test_bruck_all_gather():
    n = 1000
    result = ideal("all_gather", n, "bruck")
    assert result.num_steps == 10
    assert result.time_s == pytest.approx(10 * ALPHA + (n - 1) / n * SIZE * BETA, rel=1e-12)


def test_pipelined_chain_broadcast_is_k_plus_s_minus_2_steps():
    from ddlsim.network.collectives.pipelined_tree import PipelinedTree
    from ddlsim.network.estimator import CollectiveEstimator

    n, chunks = 10, 16
    chain = CollectiveEstimator(IDEAL, PipelinedTree(fanout=1, chunks=chunks), None)
    result = chain.estimate("broadcast", SIZE, num_ranks=n)
    assert result.num_steps == chunks + n - 2  # RAMP Eq. 1: k + s - 2 steps, s = n nodes on the chain
    assert result.time_s == pytest.approx((chunks + n - 2) * (ALPHA + SIZE / chunks * BETA), rel=1e-12)


def test_step_counts_at_1024_ranks():
    assert ideal("all_reduce", 1024, "ring").num_steps == 2046
    assert ideal("all_reduce", 1024, "rhd").num_steps == 20
    superpod = make_fabric("superpod")
    hierarchical = estimate_collective("all_reduce", SIZE, 1024, superpod, "hierarchical")
    assert hierarchical.num_steps == 2 * (7 + 3 + 31)  # 8 GPUs per node, 4 nodes per leaf, 32 leaves


def test_ring_reductions_are_priced_by_the_roofline():
    model = ReductionModel.from_datasheet("a100_80gb")
    n = 64
    result = ideal("all_reduce", n, "ring", device=model)
    per_step = max((SIZE / n / 2) / 312e12, 3 * SIZE / n / 2039e9)
    assert result.compute_s == pytest.approx((n - 1) * per_step, rel=1e-12)


def test_x_to_1_reduction_is_up_to_2_8_times_faster_at_x_32():
    # RAMP Fig. 23 / 8.4.2: summing 32 inputs with one 32-to-1 reduction instead of 31 two-to-1 ones.
    model = ReductionModel.from_datasheet("a100_80gb")
    chunk = 10**9 / 32
    sequential = 31 * model.reduction_time_s(2, chunk)
    at_once = model.reduction_time_s(32, chunk)
    assert sequential / at_once == pytest.approx(3 * 31 / 33, rel=1e-12)
    assert 2.8 < sequential / at_once < 2.85


SUPERPOD = make_fabric("superpod")
LAYOUT = GroupLayout(size=65536)
PLACEMENT = SUPERPOD.place(65536)


@pytest.mark.parametrize(("peer", "latency_ns", "bandwidth"), [
    (1, 100 + 2 * 20 + 100, 2.4e12),                                # same DGX: NVSwitch
    (8, 100 + 2 * 10 + 350, 200e9),                                 # same leaf: one QM8790
    (32, 100 + 2 * (10 + 50) + 3 * 350, 200e9),                     # same pod: leaf, spine, leaf
    (1024, 100 + 2 * (10 + 50 + 1250) + 5 * 350, 200e9),            # across the core
])
def test_superpod_single_flow(peer, latency_ns, bandwidth):
    cost = SUPERPOD.price(Pairs(65536, [0], [peer]), LAYOUT, PLACEMENT)
    assert cost.latency_s == pytest.approx(latency_ns * 1e-9, rel=1e-12)
    assert cost.s_per_unit == pytest.approx(8 / bandwidth, rel=1e-12)


def test_oversubscribed_leaf_uplinks_slow_a_leaf_wide_exchange():
    fabric = make_fabric("superpod", oversubscription=[4.0, 1.0])
    leaf = np.arange(32)
    cost = fabric.price(Pairs(65536, leaf, leaf + 32), LAYOUT, PLACEMENT)
    assert cost.s_per_unit == pytest.approx(4 * 8 / 200e9, rel=1e-12)
    one_flow = fabric.price(Pairs(65536, [0], [32]), LAYOUT, PLACEMENT)
    assert one_flow.s_per_unit == pytest.approx(8 / 200e9, rel=1e-12)


def test_torus_single_flows():
    torus = make_fabric("torus2d")
    layout, placement = GroupLayout(65536), torus.place(65536)

    def cost(src, dst):
        return torus.price(Pairs(65536, [src], [dst]), layout, placement)

    assert cost(0, 1).latency_s == pytest.approx(100e-9 + 156e-9, rel=1e-12)
    assert cost(0, 127).latency_s == pytest.approx(100e-9 + 156e-9, rel=1e-12)  # the wrap-around link
    assert cost(0, 128).latency_s == pytest.approx(100e-9 + 520e-9, rel=1e-12)
    assert cost(0, 64).latency_s == pytest.approx(100e-9 + 64 * 156e-9, rel=1e-12)
    assert cost(0, 1).s_per_unit == pytest.approx(8 / 600e9, rel=1e-12)
    # two flows sharing the +x link out of node 1
    shared = torus.price(Pairs(65536, [0, 1], [2, 2 + 128]), layout, placement)
    assert shared.s_per_unit == pytest.approx(2 * 8 / 600e9, rel=1e-12)


def test_leaf_spine_single_flows():
    fabric = make_fabric("leaf_spine")
    layout, placement = GroupLayout(256), fabric.place(256)
    inside = fabric.price(Pairs(256, [0], [1]), layout, placement)
    across = fabric.price(Pairs(256, [0], [8]), layout, placement)
    assert inside.latency_s == pytest.approx(1.1e-6, rel=1e-12)
    assert across.latency_s == pytest.approx(1.1e-6, rel=1e-12)
    assert inside.s_per_unit == pytest.approx(8 / 3.6e12, rel=1e-12)
    assert across.s_per_unit == pytest.approx(8 / 400e9, rel=1e-12)


@pytest.mark.parametrize("fabric_name", ["ideal", "superpod", "leaf_spine"])
def test_mesh_closed_form_equals_the_listed_pairs(fabric_name):
    rng = np.random.default_rng(7)
    fabric = make_fabric(fabric_name, num_nodes=256) if fabric_name != "leaf_spine" else make_fabric("leaf_spine")
    if fabric_name == "superpod":
        fabric = make_fabric("superpod", num_nodes=4096, oversubscription=[2.0, 1.5])
    for trial in range(6):
        n = int(rng.integers(8, 200))
        stride = int(rng.integers(1, 4)) if n * 3 <= fabric.num_nodes else 1
        blocks = rng.integers(-1, max(2, n // int(rng.integers(2, 9))), size=n)
        mesh = Mesh(n, blocks, weight=float(rng.uniform(0.5, 2)))
        listed = mesh.pairs()
        pairs = Pairs(n, listed.src, listed.dst, listed.weight)
        layout = GroupLayout(n, stride, n * stride)
        placement = fabric.place(n * stride)
        closed, generic = fabric.price(mesh, layout, placement), fabric.price(pairs, layout, placement)
        assert closed.latency_s == pytest.approx(generic.latency_s, rel=1e-12), trial
        assert closed.s_per_unit == pytest.approx(generic.s_per_unit, rel=1e-12), trial


@pytest.mark.parametrize("fabric_name", ["ideal", "superpod", "torus2d", "leaf_spine"])
def test_fast_paths_equal_the_generic_flow_model(fabric_name):
    """Each fabric's direct aggregation gives what its `route` + `price_flows` model gives."""
    from ddlsim.network.fabrics.base import Fabric

    fabric = {"ideal": make_fabric("ideal", num_nodes=1024), "superpod": make_fabric("superpod", num_nodes=4096,
              oversubscription=[2.0, 3.0]), "torus2d": make_fabric("torus2d", dims=[16, 32]),
              "leaf_spine": make_fabric("leaf_spine", num_nodes=512, tier_sizes=[512])}[fabric_name]
    rng = np.random.default_rng(3)
    for trial in range(8):
        n = int(rng.integers(2, 400))
        src = rng.integers(0, n, size=3 * n)
        dst = rng.integers(0, n, size=3 * n)
        keep = src != dst
        pattern = Pairs(n, src[keep], dst[keep], rng.uniform(0, 3, size=int(keep.sum())))
        layout = GroupLayout(n)
        placement = fabric.place(n)
        fast = fabric.price(pattern, layout, placement)
        generic = Fabric.price_listed(fabric, pattern, layout, placement)
        assert fast.latency_s == pytest.approx(generic.latency_s, rel=1e-12), trial
        assert fast.s_per_unit == pytest.approx(generic.s_per_unit, rel=1e-12), trial
    n = min(512, fabric.num_nodes)
    targets = rng.permutation(n)
    movers = np.flatnonzero(targets != np.arange(n))
    promised = Pairs(n, movers, targets[movers], rng.uniform(0, 3, size=movers.size), one_to_one=True)
    plain = Pairs(n, movers, targets[movers], promised.weight)
    layout, placement = GroupLayout(n), fabric.place(n)
    assert fabric.price(promised, layout, placement).s_per_unit == pytest.approx(
        fabric.price(plain, layout, placement).s_per_unit, rel=1e-12)


@pytest.mark.parametrize("fabric_name", ["superpod", "leaf_spine", "superpod_1to1"])
def test_closed_form_xor_and_shift_equal_the_listed_pairs(fabric_name):
    """RHD's XOR steps and full ring shifts are priced in closed form; the arrays must agree."""
    from ddlsim.network.patterns import shift_pairs, xor_pairs

    fabric = make_fabric(fabric_name, num_nodes=8192 if fabric_name != "leaf_spine" else 256,
                         **({"oversubscription": [3.0, 2.0]} if fabric_name == "superpod" else {}))
    for n, stride, groups in [(2, 1, 1), (16, 2, 1), (64, 8, 2), (256, 1, 1), (1024, 4, 2), (32, 32, 4)]:
        if n * stride * groups > fabric.num_nodes:
            continue
        layout = GroupLayout(n, stride, n * stride * groups)
        placement = fabric.place(layout.job_ranks)
        patterns = [xor_pairs(n, 1 << bit, 2.5) for bit in range(n.bit_length() - 1)]
        offsets = {1, n - 1, max(1, n // 2), 3 % n}
        patterns += [shift_pairs(n, 1, n, offset, weight=1.5) for offset in offsets if offset % n]
        for pattern in patterns:
            closed = fabric.price(pattern, layout, placement)
            listed = fabric.price(Pairs(n, pattern.src, pattern.dst, pattern.weight), layout, placement)
            assert closed.latency_s == pytest.approx(listed.latency_s, rel=1e-12), (n, stride, pattern.structure)
            assert closed.s_per_unit == pytest.approx(listed.s_per_unit, rel=1e-12), (n, stride, pattern.structure)


@pytest.mark.parametrize(("op", "algorithm", "rank", "received"), [
    ("all_gather", "ring", 3, 7 / 8),       # the output buffer is size_bytes; a rank lacks 7/8 of it
    ("reduce_scatter", "direct", 3, 7 / 8),  # the input buffer is size_bytes; 7 peers send 1/8 each
    ("all_to_all", "direct", 3, 7 / 8),     # every peer's block for this rank
    ("broadcast", "direct", 3, 1.0),        # the root's whole buffer
    ("gather", "direct", 0, 7 / 8),         # the root's output buffer, minus its own block
    ("scatter", "direct", 3, 1 / 8),        # one block of the root's buffer
    ("send_recv", "direct", 1, 1.0),        # the bytes sent
])
def test_size_bytes_is_the_nccl_tests_buffer(op, algorithm, rank, received):
    """The nccl-tests convention of CollectiveCall, seen in the bytes a rank receives."""
    from ddlsim.core.registry import ALGORITHMS
    from ddlsim.network.collectives.base import ScheduleRequest

    n = 2 if op == "send_recv" else 8
    chosen = ALGORITHMS.make(algorithm)
    schedule = chosen.explicit(ScheduleRequest.single_group(op, n, chosen.verification_fabric(n)))
    got = sum(np.count_nonzero(step.dst == rank) for step in schedule.steps) * schedule.chunk_fraction
    assert got == pytest.approx(received)
