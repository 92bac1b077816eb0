"""Closed forms equal the listed, flow-by-flow prices they replace.

The torus prices a full XOR (RHD, recursive doubling) from one row and one column
(`Torus2D._xor_cost`); here every mask of several torus shapes and layouts (single groups,
strided groups, partial rows) is priced both ways, and whole estimates at 4,096 ranks too.
"""

from __future__ import annotations

import pytest

from ddlsim.core.errors import InfeasibleError
from ddlsim.core.types import GroupLayout
from ddlsim.network import CollectiveEstimator, make_fabric
from ddlsim.network.patterns import Pairs, xor_pairs

SHAPES = [(8, 8), (4, 16), (16, 4), (2, 8), (8, 6), (32, 2)]
LAYOUTS = [(2, 1, 2), (4, 1, 4), (8, 1, 8), (16, 1, 16), (8, 2, 16), (4, 4, 32), (16, 2, 64), (32, 1, 64),
           (8, 1, 48), (4, 2, 24), (2, 8, 64)]


def _listed(pattern: Pairs) -> Pairs:
    """The same transfers without their structure tag: priced flow by flow."""
    return Pairs(pattern.group_size, pattern.src, pattern.dst, pattern.weight, key=("listed", pattern.key),
                 one_to_one=True)


@pytest.mark.parametrize("shape", SHAPES)
def test_torus_xor_closed_form_equals_the_listed_price(shape):
    torus = make_fabric("torus2d", dims=list(shape), router_latency="7ns")
    checked = 0
    for size, stride, ranks in LAYOUTS:
        if ranks > torus.num_nodes:
            continue
        layout = GroupLayout(size, stride, ranks)
        placement = torus.place(ranks)
        for bit in range(size.bit_length() - 1):
            pattern = xor_pairs(size, 1 << bit, 0.375)
            closed = torus.price_listed(pattern, layout, placement)
            listed = torus.price_listed(_listed(pattern), layout, placement)
            assert (closed.latency_s, closed.s_per_unit) == (listed.latency_s, listed.s_per_unit), (layout, bit)
            checked += 1
    assert checked >= 10


@pytest.mark.parametrize("algorithm", ["rhd", "recursive_doubling"])
@pytest.mark.parametrize("op", ["all_reduce", "reduce_scatter", "all_gather", "broadcast"])
def test_torus_estimates_at_4096_ranks_match_flow_by_flow_pricing(algorithm, op, monkeypatch):
    from ddlsim.network.fabrics.torus import Torus2D

    torus = make_fabric("torus2d", dims=[64, 64])
    layout = GroupLayout(2048, 2, 4096)
    try:
        closed = CollectiveEstimator(torus, algorithm).estimate(op, 10**9, layout=layout)
    except InfeasibleError as error:  # an op the algorithm does not run
        pytest.skip(str(error))
    monkeypatch.setattr(Torus2D, "_xor_cost", lambda *args: None)
    listed = CollectiveEstimator(torus, algorithm).estimate(op, 10**9, layout=layout)
    assert closed == listed
