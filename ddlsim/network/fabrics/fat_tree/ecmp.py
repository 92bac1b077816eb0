"""ECMP over a fat-tree's physical uplinks: which link of each tier a (source, destination) pair takes.

By default a fat-tree declares one bundle per tier-t domain (all its uplinks as one resource), as
if every flow were spread perfectly over them. With ``uplinks_per_domain = [L_0, L_1, ...]`` the
fabric declares each of the L_t uplinks (and downlinks) of every tier-t domain apart, each of the
bundle's capacity divided by L_t, and every flow takes one of them, chosen by a hash of its
(source, destination) pair as equal-cost multi-path routing does (RFC 2992; one path per flow, so
two flows may hash onto one link while another stays idle). In a k-ary fat-tree (Al-Fares et al.
2008) an edge switch has L_0 = k / 2 uplinks, one to each aggregation switch of its pod, and a pod
L_1 = (k / 2)^2, one per core switch: the core a flow reaches is one of the k / 2 above the
aggregation switch it chose, so the index at tier t refines the one at tier t - 1
(``index_t = index_{t-1} * L_t / L_{t-1} + h_t``), and the destination's downlink at every tier
is the one with the same index (the down path mirrors the up path through the same top switch).
"""

from __future__ import annotations

import numpy as np

from ddlsim.core.errors import ConfigError

_MIX = np.uint64(0x9E3779B97F4A7C15)  # the 64-bit golden-ratio increment of splitmix64 (Steele et al. 2014)


def check_uplinks(uplinks_per_domain: list[int], tier_sizes: list[int]) -> None:
    """Empty (bundles), or one count per tier below the top, each >= 1 and a multiple of the one below."""
    counts = [int(count) for count in uplinks_per_domain]
    if not counts:
        return
    if len(counts) != len(tier_sizes) - 1:
        raise ConfigError("uplinks_per_domain", counts, f"needs one count per tier below the top "
                                                        f"({len(tier_sizes) - 1}) or none (one bundle per domain)")
    previous = 1
    for count in counts:
        if count < 1 or count % previous:
            raise ConfigError("uplinks_per_domain", counts, "each count must be >= 1 and a multiple of the "
                                                            "previous tier's (a k-ary fat-tree: [k/2, (k/2)^2])")
        previous = count


def _splitmix64(values: np.ndarray) -> np.ndarray:
    """The splitmix64 finaliser: a well-mixed 64-bit hash of each value (deterministic)."""
    z = values.astype(np.uint64) + _MIX
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def uplink_indices(src_nodes: np.ndarray, dst_nodes: np.ndarray, num_nodes: int, counts: tuple[int, ...],
                   seed: int = 0) -> list[np.ndarray]:
    """The uplink index (0 .. L_t - 1) each pair takes at every tier t (module docstring)."""
    with np.errstate(over="ignore"):
        key = (src_nodes.astype(np.uint64) * np.uint64(num_nodes) + dst_nodes.astype(np.uint64)
               + np.uint64(seed) * np.uint64(0x100000001B3))
        digest = _splitmix64(key)
    indices, previous, index = [], 1, np.zeros(src_nodes.size, dtype=np.int64)
    for tier, count in enumerate(counts):
        branch = count // previous
        with np.errstate(over="ignore"):
            bits = _splitmix64(digest + np.uint64(tier))
        index = index * branch + (bits % np.uint64(branch)).astype(np.int64)
        indices.append(index)
        previous = count
    return indices
