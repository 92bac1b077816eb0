"""A direct exchange on RAMP too large to list (over 16.7 million transfers): its rounds in closed form.

The transcoder (`transcoder.plan_step_rules`) time-multiplexes a step in ceil(load / x) rounds at
one transceiver group per transfer when some resource carries more than x transfers. A mesh of
more than 16.7 million transfers always does (every member has over 4,096 peers), so its price
only needs the load, which follows from counts per block without listing a transfer:

- a node's peers: its block's size minus one (as sender and as receiver);
- a shared subnet resource: its key splits into a part fixed by the source and a part fixed by
  the destination (broadcast-and-select: source group x (destination group, wavelength = the
  destination's number)), so the transfers on a key are, summed over blocks, the block's
  members with the source part times those with the destination part, less each member's pair
  with itself. Multicast counts distinct sources per (source group, destination group,
  wavelength) instead, and distinct wavelengths (channels) per source, as
  `multicast.multicast_plan` does (on AWGR subnets the wavelength, lam_dst - lam_src, depends
  on both ends: one count per wavelength offset).
"""

from __future__ import annotations

import math

import numpy as np

from ddlsim.core.types import GroupLayout
from ddlsim.network.fabrics.ramp.topology import RampDims
from ddlsim.network.patterns import Mesh
from ddlsim.network.placement import Placement, job_ranks


def mesh_members(mesh: Mesh, layout: GroupLayout, placement: Placement) -> tuple[np.ndarray, np.ndarray]:
    """(fabric node, block id over the whole job) of every member of a block of two or more."""
    positions = np.flatnonzero(mesh.blocks >= 0)
    nodes = placement.node_of(job_ranks(layout, positions)).ravel()
    num_blocks = int(mesh.blocks.max()) + 1
    block = (np.arange(layout.num_groups)[:, None] * num_blocks + mesh.blocks[positions][None, :]).ravel()
    sizes = np.bincount(block)
    active = sizes[block] > 1
    _, block = np.unique(block[active], return_inverse=True)
    return nodes[active], block.ravel()


def _resource_parts(dims: RampDims, subnet: str, nodes: np.ndarray) -> list[tuple[np.ndarray, int, np.ndarray, int]]:
    """Per shared resource kind: (source part of the key, its range, destination part, its range),
    each evaluated on every member (as the source, resp. the destination, of a transfer)."""
    g, j, lam = dims.coords(nodes)
    x, racks, wavelengths = dims.x, dims.racks, dims.wavelengths
    group_number = g * wavelengths + lam          # (group, node number)
    if subnet == "broadcast_select":            # (g_src, g_dst, wavelength = lam_dst)
        return [(g, x, group_number, x * wavelengths)]
    if subnet == "route_broadcast":             # (g_src, g_dst, lam_dst, wavelength = lam_dst - lam_src)
        return [(group_number, x * wavelengths, group_number, x * wavelengths)]
    return [(g * racks + j, x * racks, group_number, x * wavelengths),            # crossbar input
            (g, x, group_number * racks + j, x * wavelengths * racks)]           # crossbar output


def _counts(block: np.ndarray, key: np.ndarray, space: int, blocks: int) -> np.ndarray:
    return np.bincount(block * space + key, minlength=blocks * space).reshape(blocks, space).astype(np.float64)


def _sharing(block: np.ndarray, blocks: int, parts: list, multicast: bool) -> int:
    """Most transfers (multicast: distinct sources) any shared resource carries."""
    most = 0
    for src_key, src_space, dst_key, dst_space in parts:
        sources = _counts(block, src_key, src_space, blocks)
        targets = _counts(block, dst_key, dst_space, blocks)
        itself = np.bincount(src_key * dst_space + dst_key, minlength=src_space * dst_space)
        if multicast:  # a source counts once per key it reaches, unless its only target is itself
            alone = targets[block, dst_key] == 1
            itself = np.bincount(src_key[alone] * dst_space + dst_key[alone], minlength=src_space * dst_space)
            targets = (targets > 0).astype(np.float64)
        load = sources.T @ targets - itself.reshape(src_space, dst_space)
        most = max(most, int(round(load.max())))
    return most


def _awgr_multicast_sharing(dims: RampDims, nodes: np.ndarray, block: np.ndarray, blocks: int) -> int:
    """Most distinct multicast sources on one (source group, destination group, wavelength w) of
    an AWGR subnet: sources (g, lam) that have a block mate other than themselves at
    (g_dst, lam + w mod Lambda)."""
    g, _, lam = dims.coords(nodes)
    x, wavelengths = dims.x, dims.wavelengths
    sources = _counts(block, g * wavelengths + lam, x * wavelengths, blocks).reshape(blocks, x, wavelengths)
    members = sources.copy()
    flat_sources = sources.transpose(1, 0, 2).reshape(x, blocks * wavelengths)
    most = 0.0
    for offset in range(wavelengths):
        present = (np.roll(members, -offset, axis=2) >= 1).astype(np.float64)
        load = flat_sources @ present.transpose(0, 2, 1).reshape(blocks * wavelengths, x)
        if offset == 0:  # a source's own (group, number) needs a second member there
            mates = (members >= 2).astype(np.float64)
            np.fill_diagonal(load, np.einsum("bgl,bgl->g", sources, mates))
        most = max(most, float(load.max()))
    return int(round(most))


def _channels(dims: RampDims, subnet: str, nodes: np.ndarray, block: np.ndarray, blocks: int) -> int:
    """Most distinct wavelengths one multicast source needs (one per destination node number;
    AWGR subnets map destination numbers one to one onto wavelengths too)."""
    _, _, lam = dims.coords(nodes)
    per_number = _counts(block, lam, dims.wavelengths, blocks)
    numbers = (per_number > 0).sum(axis=1)
    return int(np.max(numbers[block] - (per_number[block, lam] == 1)))


def large_mesh_plan(dims: RampDims, subnet: str, mesh: Mesh, layout: GroupLayout, placement: Placement
                    ) -> tuple[int, int]:
    """(transceiver groups per transfer, rounds): one group in ceil(load / x) rounds when the load
    exceeds x (always, for a mesh too large to list), else x // load groups in one round."""
    nodes, block = mesh_members(mesh, layout, placement)
    blocks = int(block.max()) + 1
    load = int(np.bincount(block).max()) - 1
    if mesh.multicast and subnet != "broadcast_select":
        load = max(load, _awgr_multicast_sharing(dims, nodes, block, blocks))
    else:
        load = max(load, _sharing(block, blocks, _resource_parts(dims, subnet, nodes), mesh.multicast))
    if mesh.multicast:
        load = max(load, _channels(dims, subnet, nodes, block, blocks))
    if load > dims.x:
        return 1, math.ceil(load / dims.x)
    return dims.x // max(load, 1), 1
