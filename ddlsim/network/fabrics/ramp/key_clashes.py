"""Rows that reuse a resource: equal integer keys counted fast, and clashing rows moved to later
rounds. RAMP's transcoder keys every (transfer, transceiver group) row by the transmitter,
receiver and subnet wavelength it uses; two rows with one key in one round collide.

numpy's hashed unique is slow on 1e6+ keys, so keys are counted in a table when they are dense
(`int_arrays.counts_in_a_table`, which `int_arrays.all_distinct` uses too) and by sorting otherwise.
"""

from __future__ import annotations

import numpy as np

from ddlsim.network.int_arrays import counts_in_a_table


def occurrence(keys: np.ndarray) -> np.ndarray:
    """For each entry, how many earlier entries share its key (0 for the first)."""
    order = np.argsort(keys, kind="stable")
    return _occurrence_sorted(keys[order], order)


def round_occurrence(key: np.ndarray, rounds: np.ndarray) -> np.ndarray:
    """`occurrence` of the (key, round) pairs, i.e. of key * (size + 1) + rounds.

    When the pairs fit, each is tagged with its index into one unique int64 and sorted by
    numpy's (fast, unstable) sort: sorting unique values orders equal pairs by index, as the
    stable argsort does. Otherwise the stable argsort is used."""
    size = key.size
    if size == 0:
        return np.zeros(0, dtype=np.int64)
    low_key, top_key = int(key.min()), int(key.max()) + 1
    top_round = int(rounds.max()) + 1
    # top_round <= size + 1: key * (size + 1) + rounds tells pairs apart, so both encodings agree.
    if (low_key >= 0 and int(rounds.min()) >= 0 and top_round <= size + 1
            and top_key * (size + 1) < _INT64_LIMIT and top_key * top_round * size < _INT64_LIMIT):
        tagged = np.sort((key * top_round + rounds) * size + np.arange(size, dtype=np.int64))
        pair, order = np.divmod(tagged, size)
        return _occurrence_sorted(pair, order)
    return occurrence(key * (size + 1) + rounds)


_INT64_LIMIT = 2 ** 63


def _occurrence_sorted(sorted_keys: np.ndarray, order: np.ndarray) -> np.ndarray:
    """`occurrence` given the keys sorted with equal keys in index order, and that order."""
    size = order.size
    starts = np.concatenate([[True], sorted_keys[1:] != sorted_keys[:-1]]) if size else np.zeros(0, bool)
    run_start = np.maximum.accumulate(np.where(starts, np.arange(size), 0))
    earlier = np.empty(size, dtype=np.int64)
    earlier[order] = np.arange(size) - run_start
    return earlier


def max_multiplicity(keys: np.ndarray) -> int:
    """Largest number of equal entries."""
    if keys.size == 0:
        return 0
    if counts_in_a_table(keys):
        return int(np.bincount(keys).max())
    ordered = np.sort(keys)
    bounds = np.flatnonzero(np.concatenate([[True], ordered[1:] != ordered[:-1], [True]]))
    return int(np.diff(bounds).max())


def rounds_of_keys(keys: list[np.ndarray], size: int) -> np.ndarray:
    """Move rows that reuse a resource to later rounds until no round reuses one."""
    rounds = np.zeros(size, dtype=np.int64)
    while True:
        bumped = False
        for key in keys:
            clash = round_occurrence(key, rounds)
            if np.any(clash):
                rounds += clash
                bumped = True
        if not bumped:
            return rounds
