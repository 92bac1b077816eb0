"""Transceiver groups and rounds of a multicast step on RAMP (SOA gating, RAMP 6.1.5).

One transceiver group tuned to a wavelength reaches the node of that number in every rack of
every destination group, so a source needs one transceiver group per distinct destination
wavelength (a channel), not one per destination. Three resources still limit a round:

- a source has x transceiver groups: at most x channels at once;
- a receiver has x receivers (one per transceiver index t, each on subnet (g_src, g_dst, t)),
  so it hears at most x senders at once;
- a subnet carries one signal per wavelength, so the sources that share a (source group,
  destination group, wavelength) have x subnets (one per t) between them.

When the busiest of these needs more than x, the step runs in ceil(load / x) rounds at one
group per channel (the same rule as unicast steps, `transcoder.transceivers_per_pair`);
otherwise each channel gets as many groups as its source, its receivers and its subnets leave.
"""

from __future__ import annotations

import math

import numpy as np

from ddlsim.network.fabrics.ramp.topology import RampDims
from ddlsim.network.fabrics.ramp.transcoder import wavelengths_of


def _relabel(ids: np.ndarray) -> tuple[int, np.ndarray]:
    """(number of distinct ids, each entry's rank among them): a table when the ids are dense,
    else a sort (numpy's hashed unique takes minutes on the 16.7 million transfers of a
    4,096-rank mesh)."""
    top = int(ids.max()) + 1
    if top <= _TABLE_CELLS >> 2:
        present = np.zeros(top, dtype=bool)
        present[ids] = True
        index = np.cumsum(present, dtype=np.int32) - 1
        return int(index[-1]) + 1, index[ids].astype(np.int64)
    order = np.argsort(ids, kind="stable")
    ordered = ids[order]
    labels = np.empty(ids.size, dtype=np.int64)
    labels[order] = np.cumsum(np.concatenate([[True], ordered[1:] != ordered[:-1]])) - 1
    return int(labels.max()) + 1, labels


def _distinct_per(owner: np.ndarray, other: np.ndarray) -> np.ndarray:
    """For every entry: how many distinct `other` values its `owner` is paired with."""
    owners, owner_index = _relabel(owner)
    others, other_index = _relabel(other)
    keys = owner_index * others + other_index
    if owners * others <= _TABLE_CELLS:
        seen = np.zeros(owners * others, dtype=bool)
        seen[keys] = True
        per_owner = seen.reshape(owners, others).sum(axis=1)
    else:
        ordered = np.sort(keys)
        first = np.concatenate([[True], ordered[1:] != ordered[:-1]])
        per_owner = np.bincount(ordered[first] // others, minlength=owners)
    return per_owner[owner_index]


_TABLE_CELLS = 1 << 26


def multicast_plan(dims: RampDims, subnet: str, src: np.ndarray, dst: np.ndarray) -> tuple[np.ndarray, int]:
    """(transceiver groups per transfer, rounds) of one multicast step (module docstring)."""
    x, lam = dims.x, dims.wavelengths
    gs, _, lam_src = dims.coords(src)
    gd, _, lam_dst = dims.coords(dst)
    wavelength = wavelengths_of(subnet, lam_src, lam_dst, lam)
    channels = _distinct_per(src, wavelength)
    receive = max(int(_distinct_per(dst, src).max()), int(_distinct_per((gs * x + gd) * lam + wavelength, src).max()))
    load = max(int(channels.max()), receive)
    if load > x:
        return np.ones(src.size), math.ceil(load / x)
    return np.minimum(x // channels, x // receive).astype(np.float64), 1


def class_multicast_load(dims: RampDims, subnet: str, src: np.ndarray, dst: np.ndarray, classes: np.ndarray,
                         count: int) -> np.ndarray:
    """Per class of a pipelined multicast pattern: the busiest node's channels (as a source) or
    senders (as a receiver), the load that divides its x transceiver groups."""
    nodes = dims.num_nodes
    wavelength = wavelengths_of(subnet, dims.coords(src)[2], dims.coords(dst)[2], dims.wavelengths)
    busiest = np.zeros(count, dtype=np.int64)
    for owner, other in ((src, wavelength), (dst, src)):
        np.maximum.at(busiest, classes, _distinct_per(classes.astype(np.int64) * nodes + owner, other))
    return busiest
