"""Routing and first-fit wavelength assignment on the WDM ring."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ddlsim.network.collectives import wrht
from ddlsim.network.fabrics.optical_ring import rwa


def _overlap_free(arcs: rwa.Arcs, channel: np.ndarray, num_nodes: int) -> bool:
    used: dict[tuple[int, int], int] = {}
    for start, length, slot in zip(arcs.starts.tolist(), arcs.lengths.tolist(), channel.tolist()):
        for hop in range(length):
            key = ((start + hop) % num_nodes, slot)
            if key in used:
                return False
            used[key] = 1
    return True


def test_shortest_routing_and_ties():
    direction, hops = rwa.route_shortest(np.array([0, 0, 5, 2, 6]), np.array([1, 7, 3, 6, 2]), 8)
    assert hops.tolist() == [1, 1, 2, 4, 4]
    assert direction[:3].tolist() == [rwa.CW, rwa.CCW, rwa.CCW]
    # the two antipodal flows (2 -> 6, 6 -> 2) alternate directions
    assert sorted(direction[3:].tolist()) == [rwa.CW, rwa.CCW]


def test_ring_neighbour_step_needs_one_wavelength():
    nodes = np.arange(64)
    result = rwa.assign(nodes, (nodes + 1) % 64, 64)
    assert (result.cw_channels, result.ccw_channels, result.max_hops) == (1, 0, 1)


@pytest.mark.parametrize("group_size", [2, 3, 5, 8, 17, 64, 128, 129])
def test_group_gather_needs_floor_half_per_direction(group_size):
    plan = wrht.wrht_plan(1024, group_size, wavelengths=0)
    src, dst = plan[0].transfers()
    result = rwa.assign(src, dst, 1024)
    assert result.channels == wrht.routed_group_wavelengths(group_size) <= wrht.group_wavelengths(group_size)


def test_lemma1_group_of_2w_plus_1_fits_w_wavelengths():
    for wavelengths in (1, 2, 4, 16, 64):
        for group_size, fits in ((2 * wavelengths + 1, True), (2 * wavelengths + 2, False)):
            src, dst = wrht.wrht_plan(4 * group_size, group_size, wavelengths)[0].transfers()
            assert (rwa.assign(src, dst, 4 * group_size).channels <= wavelengths) is fits


@pytest.mark.parametrize("members", [2, 3, 4, 5, 8, 12, 16, 17, 20, 21, 24])
def test_all_to_all_on_a_ring_first_fit_within_paper_need(members):
    nodes = np.arange(members)
    src, dst = np.meshgrid(nodes, nodes, indexing="ij")
    keep = src != dst
    result = rwa.assign(src[keep], dst[keep], members)
    assert result.channels <= wrht.all_to_all_wavelengths(members)


def test_first_fit_above_the_load_is_reported_honestly():
    # An all-to-all among 18 ring members loads each segment 41 times; first fit needs 43.
    nodes = np.arange(18)
    src, dst = np.meshgrid(nodes, nodes, indexing="ij")
    keep = src != dst
    cw, _ = rwa.arcs_of(src[keep], dst[keep], 18)
    assert rwa.segment_load(cw, 18).max() == 41
    assert rwa.channels_needed(cw, 18) == 43


def _reference_first_fit(arcs: rwa.Arcs, num_nodes: int) -> np.ndarray:
    """First fit written the slow way, on sets of segments, in the documented order."""
    spans = [{(start + hop) % num_nodes for hop in range(length)}
             for start, length in zip(arcs.starts.tolist(), arcs.lengths.tolist())]

    def crossed(point: int) -> bool:
        return any(((point - 1) % num_nodes) in span and point in span for span in spans)

    origin = next((point for point in range(num_nodes) if not crossed(point)), 0)
    relative = [(start - origin) % num_nodes for start in arcs.starts.tolist()]
    through = [rel + length > num_nodes for rel, length in zip(relative, arcs.lengths.tolist())]
    order = sorted(range(len(spans)), key=lambda i: (not through[i], relative[i], -int(arcs.lengths[i])))
    channels: list[set[int]] = []
    result = np.empty(len(spans), dtype=np.int64)
    for index in order:
        slot = next((c for c, used in enumerate(channels) if not used & spans[index]), len(channels))
        if slot == len(channels):
            channels.append(set())
        channels[slot] |= spans[index]
        result[index] = slot
    return result


@settings(max_examples=200, deadline=None)
@given(num_nodes=st.integers(2, 40), data=st.data())
def test_fast_count_matches_explicit_first_fit(num_nodes, data):
    count = data.draw(st.integers(0, 60))
    src = np.array(data.draw(st.lists(st.integers(0, num_nodes - 1), min_size=count, max_size=count)), dtype=np.int64)
    dst = np.array(data.draw(st.lists(st.integers(0, num_nodes - 1), min_size=count, max_size=count)), dtype=np.int64)
    for arcs in rwa.arcs_of(src, dst, num_nodes):
        channel = rwa.first_fit(arcs, num_nodes)
        assert _overlap_free(arcs, channel, num_nodes)
        assert channel.tolist() == _reference_first_fit(arcs, num_nodes).tolist()
        explicit = int(channel.max()) + 1 if len(arcs) else 0
        assert rwa.channels_needed(arcs, num_nodes) == explicit
        assert explicit >= (rwa.segment_load(arcs, num_nodes).max() if len(arcs) else 0)
