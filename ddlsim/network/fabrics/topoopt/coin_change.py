"""CoinChangeMod (TopoOpt appendix E.3, Algorithm 4): routing on a union of regular rings.

On a union of rings +c1, +c2, ... every server i has a direct link to i + c (mod n) for each
selected rule c. Reaching server j from server i is then "paying" the offset (j - i) mod n with
the fewest coins c, in modulo-n arithmetic. Because every server sees the same coins, one table
indexed by the offset routes every pair: the graph is a circulant (Cayley) graph, so the table is
computed once in O(n x |coins|) with numpy and holds for all n x n pairs.

Tie-breaking follows the pseudocode: among the coins that reach an offset in the fewest steps,
the last one in the coin list becomes the back-trace entry.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ddlsim.errors import ConfigError


@dataclass(frozen=True, eq=False)
class CoinRoutes:
    """Shortest coin sequences for every offset 0..n-1 of a ring union over n members.

    `hops[o]` is the number of links a transfer over offset o crosses (0 for o = 0);
    `route[o, t]` is the coin used at hop t (in the order the hops are taken, -1 past the end).
    """

    n: int
    coins: tuple[int, ...]
    hops: np.ndarray
    route: np.ndarray

    @property
    def diameter(self) -> int:
        return int(self.hops.max())

    def mean_hops(self) -> float:
        """Average hop count over all ordered pairs of distinct members."""
        return float(self.hops[1:].mean()) if self.n > 1 else 0.0

    def coins_for(self, offset: int) -> list[int]:
        row = self.route[offset % self.n]
        return [int(c) for c in row[row >= 0]]

    def coin_counts(self) -> np.ndarray:
        """counts[o, k]: how many times coin k (index into `coins`) is used to reach offset o."""
        counts = np.zeros((self.n, len(self.coins)), dtype=np.int64)
        for index, coin in enumerate(self.coins):
            counts[:, index] = (self.route == coin).sum(axis=1)
        return counts


def coin_change_mod(n: int, coins: Sequence[int]) -> CoinRoutes:
    """Algorithm 4: minimum-hop routes over every offset of an n-member ring union."""
    if n < 1:
        raise ConfigError("n", n, "must be >= 1")
    coin_list = [int(c) % n for c in coins]
    if any(c == 0 for c in coin_list) and n > 1:
        raise ConfigError("coins", list(coins), f"must not contain multiples of n = {n}")
    distinct = tuple(dict.fromkeys(coin_list))
    hops = np.full(n, -1, dtype=np.int64)
    hops[0] = 0
    frontier = np.array([0], dtype=np.int64)
    level = 0
    coin_array = np.array(distinct, dtype=np.int64)
    while frontier.size and coin_array.size:
        level += 1
        reached = np.unique((frontier[:, None] + coin_array[None, :]).ravel() % n)
        reached = reached[hops[reached] < 0]
        hops[reached] = level
        frontier = reached
    if (hops < 0).any():
        missing = int(np.flatnonzero(hops < 0)[0])
        raise ConfigError("coins", list(coins),
                          f"cannot reach offset {missing} of {n}: the rings do not connect the group")
    last_coin = np.full(n, -1, dtype=np.int64)
    offsets = np.arange(n)
    for coin in distinct:
        before = (offsets - coin) % n
        last_coin[(hops[before] == hops - 1) & (offsets != 0)] = coin
    max_hops = int(hops.max())
    backwards = np.full((n, max(max_hops, 1)), -1, dtype=np.int64)
    current = offsets.copy()
    for step in range(max_hops):
        active = current != 0
        coin = np.where(active, last_coin[current], -1)
        backwards[:, step] = coin
        current = np.where(active, (current - coin) % n, 0)
    # The back-trace lists the last coin first; hops are taken in the reverse order.
    position = hops[:, None] - 1 - np.arange(backwards.shape[1])[None, :]
    route = np.where(position >= 0, np.take_along_axis(backwards, np.clip(position, 0, None), axis=1), -1)
    return CoinRoutes(n=n, coins=distinct, hops=hops, route=route)
