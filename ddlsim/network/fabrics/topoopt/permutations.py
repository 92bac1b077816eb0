"""Ring-AllReduce permutations of TopoOpt (NSDI'23, section 4.3 and appendix E.1).

A *regular ring* over a group of k members connects member i to member (i + p) mod k. Theorem 2
of the paper: the ring visits every member exactly once if and only if gcd(p, k) = 1, so the
candidate rings of a group are the integers coprime with k (Algorithm 2, TotientPerms). Every
candidate carries the same AllReduce equally fast ("traffic mutability"); TopoOpt overlaps
several of them, chosen close to a geometric sequence (Algorithm 3, SelectPermutations), so that
the union also has a small diameter for model-parallel traffic (Theorem 1).

All functions here are pure: integers in, integers out.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from ddlsim.core.errors import ConfigError


def _primes_below(limit: int) -> np.ndarray:
    """Primes strictly below `limit` (sieve of Eratosthenes)."""
    if limit <= 2:
        return np.zeros(0, dtype=np.int64)
    sieve = np.ones(limit, dtype=bool)
    sieve[:2] = False
    for value in range(2, math.isqrt(limit - 1) + 1):
        if sieve[value]:
            sieve[value * value::value] = False
    return np.flatnonzero(sieve)


def totient_perms(group_size: int, *, prime_only: bool = False) -> list[int]:
    """Algorithm 2: every ring-generation rule p of a group of `group_size` members, ascending.

    The rules are 1 <= p < k with gcd(p, k) = 1 (Euler's totient counts them). With
    `prime_only`, p is restricted to primes (plus p = 1, the identity ring the paper's own
    example keeps), which the paper suggests for large clusters: O(k / ln k) candidates.
    A group of 2 has the single rule p = 1; a group of 1 has none.
    """
    if not isinstance(group_size, int | np.integer) or group_size < 1:
        raise ConfigError("group_size", group_size, "must be an integer >= 1")
    k = int(group_size)
    if k == 1:
        return []
    candidates = np.arange(1, k, dtype=np.int64)
    coprime = candidates[np.gcd(candidates, k) == 1]
    if prime_only:
        allowed = np.union1d(_primes_below(k), [1])
        coprime = coprime[np.isin(coprime, allowed)]
    return [int(p) for p in coprime]


def geometric_ratio(group_size: int, degree: int) -> float:
    """The ratio SelectPermutations fits: the degree-th root of k, and at least 2 (appendix E.2)."""
    return max(2.0, float(group_size) ** (1.0 / degree))


def select_permutations(group_size: int, degree: int, candidates: Sequence[int]) -> list[int]:
    """Algorithm 3: `degree` rules from `candidates`, close in L1 norm to a geometric sequence.

    It starts from the smallest candidate q, then repeatedly multiplies q by the ratio
    (`geometric_ratio`) and takes the unused candidate nearest to the product (ties go to the
    smaller candidate); that candidate becomes the new q. Returns the chosen rules in the order
    they were picked. Asking for more rules than there are candidates is an InfeasibleError-free
    ConfigError: the caller decides how many degrees a group gets.
    """
    if degree < 0:
        raise ConfigError("degree", degree, "must be >= 0")
    pool = sorted({int(p) for p in candidates})
    if degree > len(pool):
        raise ConfigError("degree", degree,
                          f"exceeds the {len(pool)} ring permutations of a group of {group_size}")
    if degree == 0:
        return []
    ratio = geometric_ratio(group_size, degree)
    chosen = [pool.pop(0)]
    q = float(chosen[0])
    for _ in range(degree - 1):
        target = q * ratio
        best = min(pool, key=lambda r: (abs(r - target), r))
        pool.remove(best)
        chosen.append(best)
        q = float(best)
    return chosen


def ring_order(group_size: int, p: int) -> list[int]:
    """The members of a group in the order ring +p visits them, starting from member 0."""
    if math.gcd(p, group_size) != 1:
        raise ConfigError("p", p, f"must be coprime with the group size {group_size} to form a ring")
    return [(i * p) % group_size for i in range(group_size)]
