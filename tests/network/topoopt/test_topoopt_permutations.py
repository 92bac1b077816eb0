"""TotientPerms (Algorithm 2) and SelectPermutations (Algorithm 3) of TopoOpt."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ddlsim.core.errors import ConfigError
from ddlsim.network.fabrics.topoopt.coin_change import coin_change_mod
from ddlsim.network.fabrics.topoopt.permutations import (
    geometric_ratio,
    ring_order,
    select_permutations,
    totient_perms,
)


def _euler_phi(n: int) -> int:
    """Euler's product formula, independent of the gcd filter under test."""
    result, m, p = n, n, 2
    while p * p <= m:
        if m % p == 0:
            while m % p == 0:
                m //= p
            result -= result // p
        p += 1
    if m > 1:
        result -= result // m
    return result


def test_totient_perms_paper_example_n12():
    # Section 4.3: "for n = 12 servers, the ring generation rule for p = 1, 5, 7, 11".
    assert totient_perms(12) == [1, 5, 7, 11]
    assert totient_perms(12, prime_only=True) == [1, 5, 7, 11]


@pytest.mark.parametrize("k", range(2, 130))
def test_totient_perms_count_is_euler_phi(k):
    assert len(totient_perms(k)) == _euler_phi(k)


def test_prime_only_keeps_identity_ring_and_primes():
    assert totient_perms(16, prime_only=True) == [1, 3, 5, 7, 11, 13]
    assert totient_perms(30, prime_only=True) == [1, 7, 11, 13, 17, 19, 23, 29]
    assert totient_perms(2) == [1]
    assert totient_perms(1) == []


@pytest.mark.parametrize("k", range(2, 41))
def test_theorem2_rule_forms_a_ring_iff_coprime(k):
    rules = set(totient_perms(k))
    for p in range(1, k):
        visited = {(i * p) % k for i in range(k)}
        assert (len(visited) == k) == (p in rules)
    for p in rules:
        assert sorted(ring_order(k, p)) == list(range(k))


def test_ring_order_rejects_non_generator():
    with pytest.raises(ConfigError, match="coprime"):
        ring_order(12, 4)


def test_select_permutations_worked_examples():
    # n = 12: ratio sqrt(12) = 3.46 -> 5 is the nearest unused candidate.
    assert select_permutations(12, 2, totient_perms(12)) == [1, 5]
    # ratio 12^(1/3) = 2.29: 2.29 -> 5, then 5 x 2.29 = 11.4 -> 11.
    assert select_permutations(12, 3, totient_perms(12)) == [1, 5, 11]
    # 128 servers, d = 4 (the Fig. 11 setting): ratio 128^(1/4) = 3.36.
    assert select_permutations(128, 4, totient_perms(128)) == [1, 3, 11, 37]
    assert select_permutations(12, 0, totient_perms(12)) == []


def test_select_permutations_ratio_is_at_least_two():
    # Appendix E.2: when n^(1/d) < 2, the sequence uses ratio 2.
    assert geometric_ratio(128, 8) == 2.0
    assert select_permutations(128, 8, totient_perms(128)) == [1, 3, 5, 9, 17, 33, 65, 127]


def test_select_permutations_too_many_degrees():
    with pytest.raises(ConfigError, match="exceeds the 4 ring permutations"):
        select_permutations(12, 5, totient_perms(12))


@settings(max_examples=60, deadline=None)
@given(n=st.integers(3, 600), degree=st.integers(1, 8))
def test_select_permutations_follows_the_geometric_projection(n, degree):
    candidates = totient_perms(n)
    if degree > len(candidates):
        return
    chosen = select_permutations(n, degree, candidates)
    assert len(set(chosen)) == degree and set(chosen) <= set(candidates)
    assert chosen[0] == min(candidates)
    ratio = geometric_ratio(n, degree)
    for previous, current in zip(chosen, chosen[1:]):
        unused = set(candidates) - set(chosen[: chosen.index(current)])
        target = previous * ratio
        assert abs(current - target) == min(abs(r - target) for r in unused)


@pytest.mark.parametrize("n", [16, 64, 100, 128, 432, 1000, 1024, 4096])
@pytest.mark.parametrize("degree", [2, 3, 4, 6, 8])
def test_theorem1_diameter_bound(n, degree):
    # Theorem 1: the diameter of the ring union is O(d * n^(1/d)); with the ratio x used by
    # SelectPermutations the greedy coin argument of appendix E.2 gives at most d * ceil(x).
    chosen = select_permutations(n, degree, totient_perms(n))
    diameter = coin_change_mod(n, chosen).diameter
    assert diameter <= degree * math.ceil(geometric_ratio(n, degree))
