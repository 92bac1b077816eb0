"""Every field of a fabric reaches its cached prices.

For each fabric and each field of its frozen dataclass (nested dataclasses such as RAMP's
`dims` field by field), a copy with that field changed is priced twice: right after the
original (caches warm with the original's plans and prices) and in cleared caches. Both must
agree, which fails when a cache key leaves the field out, and, unless the field is listed below
as price-neutral for these calls with the reason, the price must differ from the original's.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

import ddlsim
from ddlsim.app.catalog import load_all
from ddlsim.core.types import CollectiveOp, GroupLayout
from ddlsim.network import CollectiveEstimator, make_fabric

load_all()
CALLS = [(CollectiveOp.ALL_REDUCE, 1 << 20, GroupLayout(16)), (CollectiveOp.ALL_TO_ALL, 1 << 20, GroupLayout(16)),
         (CollectiveOp.BROADCAST, 4096, GroupLayout(16)), (CollectiveOp.ALL_GATHER, 1 << 24, GroupLayout(8, 2, 16)),
         (CollectiveOp.REDUCE_SCATTER, 1 << 26, GroupLayout(32, 1, 64))]
FABRICS = {
    "ideal": lambda: make_fabric("ideal", num_nodes=64),
    "superpod": lambda: make_fabric("superpod", num_nodes=64, tier_sizes=[16, 32, 64], oversubscription=[2, 1.5]),
    "leaf_spine": lambda: make_fabric("leaf_spine", num_nodes=64, tier_sizes=[16, 64], oversubscription=[2],
                                      tier_propagation=["10ns", "20ns"]),
    "torus2d": lambda: make_fabric("torus2d", dims=[8, 8], router_latency="10ns"),
    "ramp": lambda: make_fabric("ramp", x=4, racks=4, wavelengths=4),
    "sipac": lambda: make_fabric("sipac", r=4, levels=3),
    "bcube": lambda: make_fabric("bcube", r=4, levels=3),
}
# Fields that leave these calls' prices unchanged, and why.
NEUTRAL = {
    "name": "a label",
    "num_nodes": "the fabric's size: calls that fit price the same (the torus takes its size from dims)",
    "cost_model": "RAMP's cost and power model, not its timing",
    "multicast": "the ideal switch replicates multicast steps; best picks the same algorithm either way here",
    "transceiver_cost_usd": "a cost", "coupler_cost_usd": "a cost", "transceiver_power_w": "a power",
    "tier_propagation_s": "superpod/leaf_spine: per-tier propagation only reaches flows that cross that tier",
    "transceiver_policy": "RAMP: paper (Eq. 3) and greedy settle on the same transceiver groups for every step of "
                          "these calls (also for ring, direct, rhd, trees and bruck on 64 ranks)",
    "node_bandwidth_bps": "torus2d: links carry the price (link_bandwidth_bps, set from it in the config); the "
                          "node total is what the physical bound uses",
}
# Structural sizes: changed alone they describe no valid fabric (the other fields must follow).
STRUCTURAL = ("num_nodes", "dims", "radix", "levels", "x", "racks", "wavelengths", "gpus_per_node", "tier_sizes")
SUBNETS = ("broadcast_select", "route_switch", "route_broadcast")


def _changed(value: Any) -> Any:
    """A different valid-looking value of the same type."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value * 2
    if isinstance(value, float):
        return value * 2 if value else 1e-7
    if isinstance(value, tuple):
        return tuple(_changed(item) for item in value)
    if value in SUBNETS:
        return SUBNETS[(SUBNETS.index(value) + 1) % len(SUBNETS)]
    if value in ("paper", "greedy"):
        return "greedy" if value == "paper" else "paper"
    return None


def _variants(record: Any, prefix: str = ""):
    """(field path, copy of `record` with that one field changed), recursing into dataclasses."""
    for item in dataclasses.fields(record):
        value = getattr(record, item.name)
        if item.name in STRUCTURAL and not dataclasses.is_dataclass(value):
            continue
        if dataclasses.is_dataclass(value):
            for path, inner in _variants(value, f"{prefix}{item.name}."):
                yield path, dataclasses.replace(record, **{item.name: inner})
            continue
        changed = _changed(value)
        if changed is not None and changed != value:
            yield f"{prefix}{item.name}", dataclasses.replace(record, **{item.name: changed})


def _prices(fabric) -> list[float]:
    prices = []
    for algorithm in ("best", "ring"):
        estimator = CollectiveEstimator(fabric, algorithm)
        prices += [estimator.estimate(op, size, layout=layout).time_s for op, size, layout in CALLS]
    return prices


@pytest.mark.parametrize("fabric_name", list(FABRICS))
def test_every_fabric_field_reaches_the_price(fabric_name):
    original = FABRICS[fabric_name]()
    checked = 0
    for path, variant in _variants(original):
        ddlsim.clear_caches()
        before = _prices(original)
        warm = _prices(variant)
        ddlsim.clear_caches()
        fresh = _prices(variant)
        assert warm == fresh, f"{fabric_name}.{path}: a cache kept the original's price"
        if path.split(".")[-1] not in NEUTRAL:
            assert warm != before, f"{fabric_name}.{path} changed no price: list it in NEUTRAL with the reason"
        checked += 1
    assert checked >= 3
