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

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ddlsim.core.errors import ConfigError


@dataclass(frozen=True, eq=False)
class CoinRoutes:
    """Shortest coin sequences for every offset 0..n-1 of a ring union over n members.

    `hops[o]` is the number of links a transfer over offset o crosses (0 for o = 0);
    `last_coin[o]` is the back-trace of Algorithm 4: the coin of the last hop towards offset o
    (-1 for o = 0). A route is read backwards from its destination, so no n x diameter table is
    ever stored (65,536 members with one ring would need 34 GB).
    """

    n: int
    coins: tuple[int, ...]
    hops: np.ndarray
    last_coin: np.ndarray

    @property
    def diameter(self) -> int:
        return int(self.hops.max())

    def mean_hops(self) -> float:
        """Average hop count over all ordered pairs of distinct members."""
        return float(self.hops[1:].mean()) if self.n > 1 else 0.0

    def coins_for(self, offset: int) -> list[int]:
        """The coins of the route over `offset`, in the order the hops are taken."""
        backwards = []
        current = offset % self.n
        while current:
            coin = int(self.last_coin[current])
            backwards.append(coin)
            current = (current - coin) % self.n
        return backwards[::-1]

    def coin_counts(self) -> np.ndarray:
        """counts[o, k]: how many times coin k (index into `coins`) is used to reach offset o."""
        counts = np.zeros((self.n, len(self.coins)), dtype=np.int64)
        if len(self.coins) == 1:
            counts[:, 0] = self.hops
            return counts
        index_of = np.zeros(self.n, dtype=np.int64)
        index_of[list(self.coins)] = np.arange(len(self.coins))
        order = np.argsort(self.hops, kind="stable")
        bounds = np.searchsorted(self.hops[order], np.arange(1, self.diameter + 2))
        for level in range(1, self.diameter + 1):
            offsets = order[bounds[level - 1]:bounds[level]]
            coin = self.last_coin[offsets]
            counts[offsets] = counts[(offsets - coin) % self.n]
            counts[offsets, index_of[coin]] += 1
        return counts


def coin_change_mod(n: int, coins: Sequence[int]) -> CoinRoutes:
    """Algorithm 4: minimum-hop routes over every offset of an n-member ring union."""
    if n < 1:
        raise ConfigError("n", n, "must be >= 1")
    coin_list = [int(c) % n for c in coins]
    if any(c == 0 for c in coin_list) and n > 1:
        raise ConfigError("coins", list(coins), f"must not contain multiples of n = {n}")
    distinct = tuple(dict.fromkeys(coin_list))
    offsets = np.arange(n)
    if len(distinct) == 1 and math.gcd(distinct[0], n) == 1:
        # One ring: offset o is o / c (mod n) hops along it, in closed form.
        coin = distinct[0]
        hops = (offsets * pow(coin, -1, n)) % n if n > 1 else np.zeros(1, dtype=np.int64)
        last_coin = np.where(offsets == 0, -1, coin)
        return CoinRoutes(n=n, coins=distinct, hops=hops.astype(np.int64), last_coin=last_coin.astype(np.int64))
    hops = np.full(n, -1, dtype=np.int64)
    hops[0] = 0
    frontier = np.array([0], dtype=np.int64)
    level = 0
    coin_array = np.array(distinct, dtype=np.int64)
    while frontier.size and coin_array.size:
        level += 1
        touched = np.zeros(n, dtype=bool)
        touched[(frontier[:, None] + coin_array[None, :]).ravel() % n] = True
        reached = np.flatnonzero(touched & (hops < 0))
        hops[reached] = level
        frontier = reached
    if (hops < 0).any():
        missing = int(np.flatnonzero(hops < 0)[0])
        raise ConfigError("coins", list(coins),
                          f"cannot reach offset {missing} of {n}: the rings do not connect the group")
    last_coin = np.full(n, -1, dtype=np.int64)
    for coin in distinct:
        before = (offsets - coin) % n
        last_coin[(hops[before] == hops - 1) & (offsets != 0)] = coin
    return CoinRoutes(n=n, coins=distinct, hops=hops, last_coin=last_coin)
