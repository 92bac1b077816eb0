"""A mesh lists its pairs block by block (blocks in id order, members in position order), every
(i, j) with i != j and i outer: checked against that definition written out pair by pair, for
blocks of equal size (listed from one block's pairs) and of mixed sizes."""

from __future__ import annotations

import numpy as np
import pytest

from ddlsim.network.fabrics.ramp.topology import RampDims
from ddlsim.network.patterns import Mesh


def listed_by_definition(blocks: np.ndarray) -> tuple[list[int], list[int]]:
    src, dst = [], []
    for block in sorted(set(blocks[blocks >= 0].tolist())):
        members = np.flatnonzero(blocks == block).tolist()
        for i in members:
            for j in members:
                if i != j:
                    src.append(i)
                    dst.append(j)
    return src, dst


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("equal", [True, False])
def test_mesh_pairs_follow_the_definition(seed, equal):
    rng = np.random.default_rng(seed)
    count, size = int(rng.integers(1, 9)), int(rng.integers(1, 6))
    sizes = np.full(count, size) if equal else rng.integers(1, 6, count)
    blocks = rng.permutation(np.repeat(rng.permutation(count), sizes))
    blocks = np.concatenate([blocks, np.full(int(rng.integers(0, 4)), -1)])
    blocks = rng.permutation(blocks)
    pairs = Mesh(blocks.size, blocks, weight=2.0).pairs()
    src, dst = listed_by_definition(blocks)
    assert pairs.src.tolist() == src and pairs.dst.tolist() == dst
    assert pairs.weight.tolist() == [2.0] * len(src)


@pytest.mark.parametrize("dims", [RampDims(4, 4, 8, 1, 1.0), RampDims(5, 3, 6, 1, 1.0)])
def test_ramp_coordinates_by_shifts_equal_division(dims):
    nodes = np.arange(dims.num_nodes, dtype=np.int64)
    rest, lam = np.divmod(nodes, dims.wavelengths)
    group, rack = np.divmod(rest, dims.racks)
    assert all(np.array_equal(a, b) for a, b in zip(dims.coords(nodes), (group, rack, lam)))
    assert tuple(int(v) for v in dims.coords(int(nodes[-1]))) == (int(group[-1]), int(rack[-1]), int(lam[-1]))
