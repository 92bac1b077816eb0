"""A direct exchange too large to list (over 16.7 million transfers), or whose members have more
peers than transceiver groups, is priced in closed form (`ramp/mesh.py`); it must give what the
transcoder gives on the listed transfers. Checked on small RAMPs by lowering the listing limit
(and turning the peers rule off for the listed price) so that both paths price the same meshes."""

from __future__ import annotations

import pytest

import ddlsim.network.fabrics.ramp.fabric as ramp_fabric
from ddlsim.core.types import GroupLayout
from ddlsim.network import CollectiveEstimator, make_fabric

DIMS = [dict(x=4, racks=4, wavelengths=8), dict(x=3, racks=2, wavelengths=6), dict(x=4, racks=2, wavelengths=4)]
# Placements: RAMP-x boxes (64, 128) and nodes in order (37, 45, 100), one group or several at once.
LAYOUTS = [(37, 1), (64, 1), (100, 1), (128, 1), (50, 2), (20, 3), (45, 1), (10, 5), (7, 7), (24, 2), (30, 1),
           (12, 3), (5, 6), (16, 2), (9, 4)]


def _price(dims: dict, subnet: str, op: str, layout: GroupLayout) -> float:
    ramp_fabric._PRICES.clear()
    fabric = make_fabric("ramp", subnet=subnet, **dims)
    size = 0 if op == "barrier" else 10**6
    return CollectiveEstimator(fabric, "direct", device=None).estimate(op, size, layout=layout).time_s


@pytest.mark.parametrize("subnet", ["broadcast_select", "route_broadcast", "route_switch"])
@pytest.mark.parametrize("dims", DIMS, ids=lambda d: f"x{d['x']}J{d['racks']}L{d['wavelengths']}")
def test_closed_form_mesh_matches_the_listed_transcoder(monkeypatch, dims, subnet):
    checked = 0
    for size, stride in LAYOUTS:
        if size * stride > dims["x"] * dims["racks"] * dims["wavelengths"] or size - 1 <= dims["x"]:
            continue  # (a mesh too large to list has more peers than transceiver groups)
        layout = GroupLayout(size, stride, size * stride)
        for op in ("all_to_all", "reduce_scatter", "all_gather", "barrier"):
            with monkeypatch.context() as patch:  # the transcoder on the listed transfers
                patch.setattr(ramp_fabric.RampFabric, "_mesh_multiplexed", lambda self, mesh: False)
                listed = _price(dims, subnet, op, layout)
            with monkeypatch.context() as patch:
                patch.setattr(ramp_fabric, "MAX_LISTED_PAIRS", 10)
                closed = _price(dims, subnet, op, layout)
            assert closed == pytest.approx(listed, rel=1e-12), (size, stride, op)
            checked += 1
    ramp_fabric._PRICES.clear()
    assert checked >= 8


def test_subnet_sharing_slows_a_mesh_placed_node_after_node():
    """37 ranks placed in order fill racks of one group: 9 sources share each subnet wavelength
    towards another group's node numbers, so the exchange needs more rounds than its 36 peers."""
    fabric = make_fabric("ramp", x=4, racks=4, wavelengths=8)
    estimator = CollectiveEstimator(fabric, "direct", device=None)
    slow = estimator.estimate("all_to_all", 10**6, num_ranks=37)
    box = estimator.estimate("all_to_all", 10**6, num_ranks=64)
    assert slow.time_s > 2 * box.time_s
