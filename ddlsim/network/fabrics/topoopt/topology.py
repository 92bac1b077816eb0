"""A direct-connect topology: servers joined by point-to-point links, with host-based forwarding.

Links are directed (one transmitter to one receiver, as a simplex fibre through a patch panel or
an OCS port); a duplex link is two of them. A transfer between servers that share no link is
forwarded by the servers on its path (TopoOpt section 3, "host-based forwarding") and loads
every link it crosses, which is where the bandwidth tax of sections 5.4 and 5.5 comes from.

Two routers, chosen by the topology's shape:

* a union of regular rings over all servers (a circulant graph) is routed with CoinChangeMod
  (`coin_change.py`), one table for every pair, fast enough for 65,536 servers;
* any other graph (rings plus MP matchings, a random expander) is routed over all shortest paths,
  splitting each transfer evenly over the equal-cost next hops at every server (ECMP), from a
  breadth-first distance matrix. That needs O(n^2) memory, so it is limited to
  `MAX_EXPLICIT_NODES` servers.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from ddlsim.core.errors import ConfigError, InfeasibleError
from ddlsim.core.types import GroupLayout
from ddlsim.network.fabrics.topoopt.coin_change import CoinRoutes, coin_change_mod

MAX_EXPLICIT_NODES = 2048
_ECMP_CELLS = 4_000_000  # links x destinations handled at once by the ECMP router (bounds memory)

LINK_KINDS = ("allreduce", "mp", "expander", "circuit")


def ring_links(layout: GroupLayout, rule: int) -> tuple[np.ndarray, np.ndarray]:
    """Directed links of ring +rule inside every group of `layout` (member i -> member i + rule)."""
    groups = np.arange(layout.num_groups, dtype=np.int64)
    span = layout.size * layout.stride
    bases = (groups // layout.stride) * span + groups % layout.stride
    ranks = bases[:, None] + np.arange(layout.size, dtype=np.int64)[None, :] * layout.stride
    src = ranks.ravel()
    dst = np.roll(ranks, -rule, axis=1).ravel()
    return src, dst


@dataclass(frozen=True, eq=False)
class DirectTopology:
    """`num_nodes` servers and their directed links (parallel links allowed).

    `circulant_rules` is set when the links are exactly the rings +p (p in the rules) over all
    servers in index order; routing then uses CoinChangeMod. `link_kind` says which part of the
    design a link belongs to (for reports), one of `LINK_KINDS`.
    """

    num_nodes: int
    link_src: np.ndarray
    link_dst: np.ndarray
    link_kind: tuple[str, ...]
    circulant_rules: tuple[int, ...] | None = None
    _cache: dict = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.num_nodes < 1:
            raise ConfigError("num_nodes", self.num_nodes, "must be >= 1")
        src = np.asarray(self.link_src, dtype=np.int64)
        dst = np.asarray(self.link_dst, dtype=np.int64)
        object.__setattr__(self, "link_src", src)
        object.__setattr__(self, "link_dst", dst)
        if src.shape != dst.shape or len(self.link_kind) != src.size:
            raise ConfigError("links", src.size, "link_src, link_dst and link_kind must have equal lengths")
        if src.size and (min(src.min(), dst.min()) < 0 or max(src.max(), dst.max()) >= self.num_nodes):
            raise ConfigError("links", "endpoints", f"must be servers 0..{self.num_nodes - 1}")
        if (src == dst).any():
            raise ConfigError("links", int(src[src == dst][0]), "a link must join two different servers")

    # --- construction -------------------------------------------------------------------------

    @classmethod
    def circulant(cls, num_nodes: int, rules: Sequence[int], kind: str = "allreduce") -> DirectTopology:
        """The union of rings +p over servers 0..n-1, link index = rule index x n + source."""
        if len(set(rules)) != len(rules) or any(math.gcd(int(r), num_nodes) != 1 for r in rules):
            raise ConfigError("rules", list(rules), f"must be distinct and coprime with {num_nodes}")
        layout = GroupLayout(size=num_nodes, stride=1, num_ranks=num_nodes)
        parts = [ring_links(layout, rule) for rule in rules]
        src = np.concatenate([p[0] for p in parts]) if parts else np.zeros(0, dtype=np.int64)
        dst = np.concatenate([p[1] for p in parts]) if parts else np.zeros(0, dtype=np.int64)
        return cls(num_nodes, src, dst, (kind,) * src.size, circulant_rules=tuple(int(r) for r in rules))

    @classmethod
    def from_parts(cls, num_nodes: int, parts: Sequence[tuple[np.ndarray, np.ndarray, str]]) -> DirectTopology:
        src = [np.asarray(p[0], dtype=np.int64) for p in parts]
        dst = [np.asarray(p[1], dtype=np.int64) for p in parts]
        kinds: list[str] = []
        for s, _, kind in parts:
            kinds.extend([kind] * len(s))
        return cls(num_nodes, np.concatenate(src) if src else np.zeros(0, dtype=np.int64),
                   np.concatenate(dst) if dst else np.zeros(0, dtype=np.int64), tuple(kinds))

    # --- structure ----------------------------------------------------------------------------

    @property
    def num_links(self) -> int:
        return int(self.link_src.size)

    def out_degree(self) -> np.ndarray:
        return np.bincount(self.link_src, minlength=self.num_nodes)

    def in_degree(self) -> np.ndarray:
        return np.bincount(self.link_dst, minlength=self.num_nodes)

    @cached_property
    def coin_routes(self) -> CoinRoutes:
        if self.circulant_rules is None:
            raise ConfigError("topology", "not circulant", "coin-change routing needs a union of regular rings")
        return coin_change_mod(self.num_nodes, self.circulant_rules)

    def _check_explicit(self) -> None:
        if self.num_nodes > MAX_EXPLICIT_NODES:
            raise InfeasibleError(
                f"shortest-path routing of a non-circulant direct-connect topology keeps an n x n distance "
                f"matrix and supports at most {MAX_EXPLICIT_NODES} servers, not {self.num_nodes}; use a pure "
                f"ring topology (no MP degree) at this scale")

    @cached_property
    def reachable_distance(self) -> np.ndarray:
        """distance[s, t]: fewest links from s to t, -1 where t cannot be reached from s."""
        if self.circulant_rules is not None:
            n = self.num_nodes
            offsets = (np.arange(n)[None, :] - np.arange(n)[:, None]) % n
            return self.coin_routes.hops[offsets]
        self._check_explicit()
        n = self.num_nodes
        dist = np.full((n, n), -1, dtype=np.int64)
        np.fill_diagonal(dist, 0)
        frontier = np.eye(n, dtype=bool)
        order = np.argsort(self.link_dst, kind="stable")
        dst_sorted = self.link_dst[order]
        starts = np.flatnonzero(np.r_[True, dst_sorted[1:] != dst_sorted[:-1]]) if order.size else np.zeros(0, int)
        level = 0
        while frontier.any() and order.size:
            level += 1
            via = frontier[:, self.link_src[order]]
            reached_cols = np.logical_or.reduceat(via, starts, axis=1)
            reached = np.zeros_like(frontier)
            reached[:, dst_sorted[starts]] = reached_cols
            reached &= dist < 0
            dist[reached] = level
            frontier = reached
        return dist

    @property
    def distance(self) -> np.ndarray:
        """Breadth-first hop counts between all servers; InfeasibleError if some pair is cut off."""
        dist = self.reachable_distance
        if (dist < 0).any():
            s, t = (int(x) for x in np.argwhere(dist < 0)[0])
            raise InfeasibleError(f"the direct-connect topology is not connected: no path from server {s} to {t}")
        return dist

    def hops(self, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
        """Links crossed by a transfer from each `src` to each `dst` (element-wise)."""
        src = np.asarray(src, dtype=np.int64)
        dst = np.asarray(dst, dtype=np.int64)
        if self.circulant_rules is not None:
            return self.coin_routes.hops[(dst - src) % self.num_nodes]
        return self.distance[src, dst]

    def mean_path_length(self) -> float:
        """Average hop count over all ordered pairs of distinct servers (TopoOpt Fig. 14)."""
        if self.num_nodes < 2:
            return 0.0
        if self.circulant_rules is not None:
            return self.coin_routes.mean_hops()
        dist = self.distance
        return float(dist.sum() / (self.num_nodes * (self.num_nodes - 1)))

    # --- loads --------------------------------------------------------------------------------

    def link_loads(self, src: np.ndarray, dst: np.ndarray, size_bytes: np.ndarray) -> np.ndarray:
        """Bytes every link carries when each transfer src -> dst of size_bytes is forwarded.

        Transfers with src == dst carry nothing. The result has one entry per link.
        """
        src = np.asarray(src, dtype=np.int64).ravel()
        dst = np.asarray(dst, dtype=np.int64).ravel()
        size = np.broadcast_to(np.asarray(size_bytes, dtype=float), src.shape).ravel()
        if self.circulant_rules is not None:
            return self._coin_loads(src, dst, size)
        return self._ecmp_loads(src, dst, size)

    def shift_loads(self, src: np.ndarray, dst: np.ndarray, size: np.ndarray) -> tuple[np.ndarray, int] | None:
        """Per-ring load of every link and the longest route, in closed form, when the transfers
        are whole shifts of a ring union: for each offset present, every server sends the same
        bytes over that offset. By symmetry every link of ring k then carries, for each offset o,
        (times coin k is used to reach o) x bytes. None when the transfers are not of that form."""
        n = self.num_nodes
        if self.circulant_rules is None or src.size % n or not src.size:
            return None
        offsets = (dst - src) % n
        present = np.flatnonzero(np.bincount(offsets, minlength=n))
        if present.size * n != src.size or present.size > 64 or (present == 0).any():
            return None
        per_ring = np.zeros(len(self.circulant_rules))
        index = {coin: k for k, coin in enumerate(self.circulant_rules)}
        longest = 0
        for offset in present.tolist():
            mask = offsets == offset
            if np.bincount(src[mask], minlength=n).min() != 1:
                return None
            weight = size[mask]
            if weight.max() != weight.min():
                return None
            coins = self.coin_routes.coins_for(offset)
            for coin in coins:
                per_ring[index[coin]] += weight[0]
            longest = max(longest, len(coins))
        return per_ring, longest

    def path_links(self, src: np.ndarray, dst: np.ndarray, max_hops: int = 4) -> np.ndarray | None:
        """links[h, f]: the link flow f crosses at hop h (-1 past its last hop), on a ring union.

        Only for circulant topologies (one path per flow) and routes of at most `max_hops` links;
        otherwise None (callers then use `link_loads`, which never lists a route hop by hop on a
        single ring).
        """
        if self.circulant_rules is None:
            return None
        src = np.asarray(src, dtype=np.int64).ravel()
        dst = np.asarray(dst, dtype=np.int64).ravel()
        n = self.num_nodes
        routes = self.coin_routes
        offsets = (dst - src) % n
        hops = routes.hops[offsets]
        longest = int(hops.max()) if hops.size else 0
        if longest > max_hops:
            return None
        rule_index = np.zeros(n, dtype=np.int64)
        rule_index[list(self.circulant_rules)] = np.arange(len(self.circulant_rules))
        if longest == 1:
            # Direct links only (ring steps): the offset is the rule itself.
            return (rule_index[offsets] * n + src)[None, :]
        if src.size and np.all(offsets == offsets[0]):
            # A shift: every flow takes the same coins, so each hop is one vector operation.
            coins = routes.coins_for(int(offsets[0]))
            prefix = np.concatenate([[0], np.cumsum(coins)[:-1]]).astype(np.int64)
            return np.stack([rule_index[c] * n + (src + p) % n for c, p in zip(coins, prefix)]) if coins else \
                np.zeros((0, src.size), dtype=np.int64)
        links = np.full((longest, src.size), -1, dtype=np.int64)
        node = dst.copy()
        back = 0
        active = np.flatnonzero(offsets != 0)
        while active.size:
            coin = routes.last_coin[offsets[active]]
            before = (node[active] - coin) % n
            links[hops[active] - 1 - back, active] = rule_index[coin] * n + before
            node[active] = before
            offsets[active] = (offsets[active] - coin) % n
            active = active[offsets[active] != 0]
            back += 1
        return links

    def _coin_loads(self, src: np.ndarray, dst: np.ndarray, size: np.ndarray) -> np.ndarray:
        routes = self.coin_routes
        n = self.num_nodes
        rules = self.circulant_rules or ()
        if len(rules) == 1:
            return self._single_ring_loads(src, dst, size, rules[0])
        rule_index = np.zeros(n, dtype=np.int64)
        rule_index[list(rules)] = np.arange(len(rules))
        # Walk every route backwards from its destination with the back-trace of Algorithm 4.
        offsets = (dst - src) % n
        node = dst.copy()
        loads = np.zeros(self.num_links)
        active = offsets != 0
        while active.any():
            at, left = node[active], offsets[active]
            coin = routes.last_coin[left]
            before = (at - coin) % n
            loads += np.bincount(rule_index[coin] * n + before, weights=size[active], minlength=self.num_links)
            node[active] = before
            offsets[active] = (left - coin) % n
            active = offsets != 0
        return loads

    def _single_ring_loads(self, src: np.ndarray, dst: np.ndarray, size: np.ndarray, rule: int) -> np.ndarray:
        """One ring: a transfer loads the arc of ring links from its source to its destination."""
        n = self.num_nodes
        inverse = pow(rule, -1, n)
        start = (src * inverse) % n                       # ring index of the source
        length = ((dst - src) * inverse) % n              # links crossed
        end = start + length
        delta = np.zeros(2 * n + 1)
        np.add.at(delta, start, size)
        np.add.at(delta, end, -size)
        arc = np.cumsum(delta)[: 2 * n]
        per_index = arc[:n] + arc[n:]                     # arcs that wrap past index n - 1
        ring_nodes = (np.arange(n) * rule) % n            # node at each ring index
        loads = np.zeros(n)
        loads[ring_nodes] = per_index                     # link index = source node of the link
        return loads

    def _ecmp_loads(self, src: np.ndarray, dst: np.ndarray, size: np.ndarray) -> np.ndarray:
        keep = (src != dst) & (size > 0)
        src, dst, size = src[keep], dst[keep], size[keep]
        loads = np.zeros(self.num_links)
        if not src.size:
            return loads
        targets, target_index = np.unique(dst, return_inverse=True)
        chunk = max(1, _ECMP_CELLS // max(self.num_links, 1))
        for start in range(0, targets.size, chunk):
            pick = (target_index >= start) & (target_index < start + chunk)
            loads += self._ecmp_chunk(src[pick], target_index[pick] - start,
                                      size[pick], targets[start:start + chunk])
        return loads

    def _ecmp_chunk(self, src: np.ndarray, column: np.ndarray, size: np.ndarray,
                    targets: np.ndarray) -> np.ndarray:
        """ECMP loads of the transfers towards `targets` (column = index into targets)."""
        n = self.num_nodes
        if (self.reachable_distance[src, targets[column]] < 0).any():
            _ = self.distance  # raises, naming an unreachable pair
        width = targets.size
        pending = np.bincount(src * width + column, weights=size, minlength=n * width).reshape(n, width)
        to_target = self.reachable_distance[:, targets]                      # [node, target]
        downhill = to_target[self.link_dst] == to_target[self.link_src] - 1  # [link, target]
        next_hops = self._sum_by(self.link_src, downhill.astype(float))
        loads = np.zeros(self.num_links)
        for level in range(int(to_target.max()), 0, -1):
            use = downhill & (to_target[self.link_src] == level)
            share = np.where(use, pending[self.link_src] / np.maximum(next_hops[self.link_src], 1.0), 0.0)
            loads += share.sum(axis=1)
            pending[to_target == level] = 0.0
            pending += self._sum_by(self.link_dst, share)
        return loads

    def _sum_by(self, endpoint: np.ndarray, values: np.ndarray) -> np.ndarray:
        """Rows of `values` (one per link) summed per node `endpoint[link]` (link_src or link_dst)."""
        key = "src" if endpoint is self.link_src else "dst"
        grouping = self._cache.get(key)
        if grouping is None:
            order = np.argsort(endpoint, kind="stable")
            ordered = endpoint[order]
            starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]]) if order.size else order
            grouping = self._cache.setdefault(key, (order, starts, ordered[starts]))
        order, starts, nodes = grouping
        total = np.zeros((self.num_nodes, values.shape[1]))
        if order.size:
            total[nodes] = np.add.reduceat(values[order], starts, axis=0)
        return total

    def bandwidth_tax(self, src: np.ndarray, dst: np.ndarray, size_bytes: np.ndarray) -> float:
        """Traffic on all links over the logical demand (TopoOpt section 5.4); 1 without relays."""
        size = np.broadcast_to(np.asarray(size_bytes, dtype=float), np.shape(src))
        demand = float(size[np.asarray(src) != np.asarray(dst)].sum())
        if demand == 0:
            return 1.0
        return float(self.link_loads(src, dst, size).sum() / demand)


def expander_topology(num_nodes: int, degree: int, seed: int = 0) -> DirectTopology:
    """A random d-regular graph of duplex links (Jellyfish/Xpander style, TopoOpt section 5.1).

    networkx draws the graph from `seed`; a draw that is not connected is redrawn with seed + 1,
    seed + 2, ... so the result is a deterministic function of (n, d, seed).
    """
    if degree < 1 or degree >= num_nodes:
        raise ConfigError("degree", degree, f"must be in [1, {num_nodes - 1}] for {num_nodes} servers")
    if (num_nodes * degree) % 2:
        raise ConfigError("degree", degree, f"n x d must be even for a d-regular graph; n = {num_nodes}")
    import networkx as nx  # networkx loads only where a graph is built (issue 15: light imports)

    for attempt in range(100):
        graph = nx.random_regular_graph(degree, num_nodes, seed=seed + attempt)
        if nx.is_connected(graph):
            edges = np.array(sorted(tuple(sorted(e)) for e in graph.edges()), dtype=np.int64).reshape(-1, 2)
            return DirectTopology.from_parts(num_nodes, [(edges[:, 0], edges[:, 1], "expander"),
                                                         (edges[:, 1], edges[:, 0], "expander")])
    raise InfeasibleError(f"no connected {degree}-regular graph on {num_nodes} servers in 100 draws from seed {seed}")
