"""Tree shapes: the closed-form depths of the in-order binary tree equal those found by walking it,
the heap tree built by level runs equals the one built by searching level starts, and the double
binary tree's reductions found from children counts equal those counted edge by edge."""

from __future__ import annotations

import numpy as np
import pytest

from ddlsim.network.collectives.tree_shapes import _depths, heap_tree, inorder_tree
from ddlsim.network.collectives.trees import _double_reductions, double_trees


@pytest.mark.parametrize("n", [*range(1, 300), 1000, 4095, 4096, 4097, 6000, 65535, 65536, 65537, 100_000])
def test_inorder_depths_equal_the_walked_depths(n):
    tree = inorder_tree(n)
    assert np.array_equal(tree.depth, _depths(tree.parent))
    assert (tree.parent < 0).sum() == 1 and tree.depth[tree.parent < 0] == 0


def _heap_tree_by_search(n: int, root: int, fanout: int) -> tuple[np.ndarray, np.ndarray]:
    """The heap tree as it was first written (parents by np.where, depths by a search of level starts)."""
    virtual = np.arange(n, dtype=np.int64)
    parent_virtual = np.where(virtual > 0, (virtual - 1) // fanout, -1)
    position = (virtual + root) % n
    parent = np.full(n, -1, dtype=np.int64)
    parent[position] = np.where(parent_virtual >= 0, (parent_virtual + root) % n, -1)
    starts = [0]
    while starts[-1] < n:
        starts.append(starts[-1] * fanout + 1 if fanout > 1 else starts[-1] + 1)
    depth = np.empty(n, dtype=np.int64)
    depth[position] = np.searchsorted(np.asarray(starts), virtual, side="right") - 1
    return parent, depth


@pytest.mark.parametrize("fanout", [1, 2, 3, 4, 8])
def test_heap_tree_equals_the_searched_one(fanout):
    for n in [*range(1, 70), 255, 256, 1000, 4097]:
        for root in sorted({0, 1, n // 2, n - 1}):
            tree = heap_tree(n, root, fanout)
            parent, depth = _heap_tree_by_search(n, root, fanout)
            assert tree.parent.dtype == parent.dtype and tree.depth.dtype == depth.dtype
            assert np.array_equal(tree.parent, parent) and np.array_equal(tree.depth, depth), (n, root)


def _double_reductions_by_edges(n: int) -> list[tuple[int, ...]]:
    """Per level of the reduction, the fan-ins of the busiest receiver, counted over that level's
    listed edges: a receiver's traffic is (its edges in a tree + 2) summed over the trees it
    receives in; the most traffic wins, then the lowest rank."""
    trees = double_trees(n)
    height = max(tree.height for tree in trees)
    found = []
    for level in range(height):
        received: dict[int, list[int]] = {}
        for index, tree in enumerate(trees):
            for child in np.flatnonzero(tree.parent >= 0):
                if height - tree.depth[child] == level:
                    received.setdefault(int(tree.parent[child]), [0, 0])[index] += 1
        if not received:
            found.append(())
            continue
        busiest = min(received, key=lambda rank: (-sum(count + 2 for count in received[rank] if count), rank))
        found.append(tuple(count + 1 for count in received[busiest] if count))
    return found


@pytest.mark.parametrize("n", [*range(2, 130), 255, 256, 257, 1000, 1023])
def test_double_tree_reductions_equal_those_counted_edge_by_edge(n):
    trees = double_trees(n)
    height = max(tree.height for tree in trees)
    reductions = _double_reductions(trees, height, 0.5)
    assert [tuple(r.fan_in for r in level) for level in reductions] == _double_reductions_by_edges(n)
    assert all(r.fraction == 0.5 for level in reductions for r in level)
