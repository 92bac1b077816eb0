"""`floor_mod` is `%` and `sorted_distinct` is `np.unique` (values and dtype), on every size, sign and
value range they meet; and the threshold that chooses how `price_flows` sums loads moves only time."""

import numpy as np
import pytest

from ddlsim.network.int_arrays import all_distinct, floor_mod, sorted_distinct


@pytest.mark.parametrize("size", [0, 1, 2, 7, 1000, 65536])
@pytest.mark.parametrize("high", [1, 5, 8192 * 8192])
@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_sorted_distinct_is_numpy_unique(size, high, dtype):
    values = np.random.default_rng(size + high).integers(0, high, size).astype(dtype)
    found = sorted_distinct(values)
    expected = np.unique(values)
    assert found.dtype == expected.dtype
    assert np.array_equal(found, expected)


@pytest.mark.parametrize("modulus", [1, 2, 3, 7, 16, 32, 48, 1 << 20])
@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.uint32])
def test_floor_mod_is_numpy_remainder(modulus, dtype):
    rng = np.random.default_rng(modulus)
    low = 0 if np.dtype(dtype).kind == "u" else -(1 << 30)
    values = np.concatenate([rng.integers(low, 1 << 30, 5000), np.arange(-3 * modulus, 3 * modulus)
                             if low < 0 else np.arange(3 * modulus)]).astype(dtype)
    found, expected = floor_mod(values, modulus), values % modulus
    assert found.dtype == expected.dtype
    assert np.array_equal(found, expected)
    two_d = values[: 4000].reshape(40, 100)
    assert np.array_equal(floor_mod(two_d, modulus), two_d % modulus)


def test_floor_mod_leaves_floats_to_numpy():
    values = np.array([-2.5, 7.25])
    assert np.array_equal(floor_mod(values, 3), values % 3)


@pytest.mark.parametrize("size", [0, 1, 2, 50, 5000])
@pytest.mark.parametrize("low, high", [(0, 3), (0, 10**5), (0, 1 << 40), (-50, 50)])
def test_all_distinct_is_numpy_unique_size(size, low, high):
    """Dense non-negative values go through a table, the others (negative, or a wide span) by a sort."""
    rng = np.random.default_rng(size + high)
    for values in (rng.integers(low, high, size), rng.permutation(np.arange(low, low + size))):
        assert all_distinct(values) == (np.unique(values).size == values.size)


def test_sorted_distinct_leaves_its_input_alone():
    values = np.array([3, 1, 3, 2])
    assert sorted_distinct(values).tolist() == [1, 2, 3]
    assert values.tolist() == [3, 1, 3, 2]


@pytest.mark.parametrize("with_classes", [False, True])
def test_price_flows_is_the_same_whether_loads_are_kept_per_used_resource_or_for_every_one(monkeypatch, with_classes):
    """The threshold between the two ways of summing loads (`pricing.SPARSE_RATIO`) moves only time."""
    from ddlsim.network import pricing

    rng = np.random.default_rng(3)
    flows, resources, num_classes = 500, 100_000, 6
    hops = tuple(np.where(rng.random(flows) < 0.2, -1, rng.integers(0, resources, flows)) for _ in range(3))
    routes = pricing.Routes(rng.random(flows) * 1e-6, hops)
    capacity = rng.choice([1e11, 4e11], resources)
    weights = rng.random(flows)
    classes = rng.integers(0, num_classes, flows) if with_classes else None

    def price(ratio):
        monkeypatch.setattr(pricing, "SPARSE_RATIO", ratio)
        return pricing.price_flows(routes, capacity, weights, classes=classes,
                                   num_classes=num_classes if with_classes else 0)

    sparse, dense = price(0), price(10**6)  # compacting below one entry per `ratio` resources
    assert (sparse.latency_s, sparse.s_per_unit) == (dense.latency_s, dense.s_per_unit)
    if with_classes:
        assert np.array_equal(sparse.class_s_per_unit, dense.class_s_per_unit)
        assert sparse.shared_prefix is not None and np.array_equal(sparse.shared_prefix, dense.shared_prefix)
        assert np.array_equal(sparse.shared_capacity_bps, dense.shared_capacity_bps)
