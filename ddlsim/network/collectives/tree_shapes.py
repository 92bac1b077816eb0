"""Tree shapes shared by the tree algorithms: heap-ordered k-ary trees and in-order binary trees.

A tree is given by `parent[p]` (-1 at the root) over group positions, with `depth[p]`. Tree
steps run level by level: a pattern lists every edge once, its class is the step in which the
edge is active, and a compact step activates one class (or a window of them, when pipelined).
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True, eq=False)
class Tree:
    parent: np.ndarray
    depth: np.ndarray
    key: Hashable = None

    @property
    def size(self) -> int:
        return self.parent.size

    @property
    def height(self) -> int:
        return int(self.depth.max()) if self.size else 0

    @property
    def children_count(self) -> np.ndarray:
        members = self.parent[self.parent >= 0]
        return np.bincount(members, minlength=self.size)

    def edges(self) -> tuple[np.ndarray, np.ndarray]:
        """(child, parent) of every edge."""
        child = np.flatnonzero(self.parent >= 0)
        return child, self.parent[child]

    def subtree_sizes(self) -> np.ndarray:
        sizes = np.ones(self.size, dtype=np.int64)
        for level in range(self.height, 0, -1):
            nodes = np.flatnonzero(self.depth == level)
            np.add.at(sizes, self.parent[nodes], sizes[nodes])
        return sizes

    def descendants(self) -> list[np.ndarray]:
        """Positions in each node's subtree (itself included), for explicit views of small trees."""
        members: list[list[int]] = [[p] for p in range(self.size)]
        for level in range(self.height, 0, -1):
            for node in np.flatnonzero(self.depth == level):
                members[int(self.parent[node])].extend(members[node])
        return [np.sort(np.asarray(found, dtype=np.int64)) for found in members]


def _depths(parent: np.ndarray) -> np.ndarray:
    """Depth of every node by pointer jumping: log2(height) passes instead of one per level."""
    depth = (parent >= 0).astype(np.int64)  # distance to `ancestor`
    ancestor = parent.copy()
    climbing = np.flatnonzero(ancestor >= 0)
    while climbing.size:
        above = ancestor[climbing]
        depth[climbing] += depth[above]
        ancestor[climbing] = ancestor[above]
        climbing = climbing[ancestor[climbing] >= 0]
    return depth


def heap_tree(n: int, root: int = 0, fanout: int = 2) -> Tree:
    """k-ary heap rooted at `root`: virtual rank v = (p - root) mod n, parent (v - 1) // fanout."""
    virtual = np.arange(n, dtype=np.int64)
    parent_virtual = (virtual - 1) // fanout  # -1 at v = 0, the root
    if fanout == 1:
        depth_virtual = virtual.copy()
    else:  # levels are whole runs of virtual ranks: 0, then 1 .. f, then 1 + f .. f + f^2, ...
        depth_virtual = np.empty(n, dtype=np.int64)
        start, level = 0, 0
        while start < n:
            stop = start * fanout + 1
            depth_virtual[start:stop] = level
            start, level = stop, level + 1
    if root == 0:
        return Tree(parent_virtual, depth_virtual, ("heap", n, root, fanout))
    position = (virtual + root) % n
    parent = np.full(n, -1, dtype=np.int64)
    parent[position] = np.where(parent_virtual >= 0, (parent_virtual + root) % n, -1)
    depth = np.empty(n, dtype=np.int64)
    depth[position] = depth_virtual
    return Tree(parent, depth, ("heap", n, root, fanout))


def _trailing_zeros(values: np.ndarray) -> np.ndarray:
    return np.log2(values & -values).astype(np.int64)


def inorder_tree(n: int) -> Tree:
    """In-order binary tree over positions 0..n-1 (label p + 1; height = trailing zeros), as in
    NCCL's double binary tree: odd labels are leaves, the root is the largest power of two <= n."""
    labels = np.arange(1, n + 1, dtype=np.int64)

    def up(label: np.ndarray) -> np.ndarray:
        height = _trailing_zeros(label)
        return np.where((label >> (height + 1)) & 1 == 1, label - (1 << height), label + (1 << height))

    root = 1 << int(np.floor(np.log2(n)))
    parent = np.where(labels == root, 0, up(labels))
    climbing = parent > n
    while np.any(climbing):
        parent[climbing] = up(parent[climbing])
        climbing = parent > n
    positions = np.where(labels == root, -1, parent - 1)
    return Tree(positions, _inorder_depths(labels, n, root), ("inorder", n))


def _inorder_depths(labels: np.ndarray, n: int, root: int) -> np.ndarray:
    """Depths of `inorder_tree` without walking it: below the root (a power of two 2^H) the tree is
    perfect, so a label of height h sits at depth H - h; a label above the root counts its in-order
    ancestors of heights h + 1 .. H - 1 that exist (<= n), each ((label >> g + 1) << g + 1) | 2^g,
    plus the root itself (the ancestors `inorder_tree` climbs past are those > n)."""
    top = root.bit_length() - 1
    height = _trailing_zeros(labels)
    depth = top - height
    above = np.flatnonzero(labels > root)
    if above.size:
        upper, upper_height = labels[above], height[above]
        count = np.ones(above.size, dtype=np.int64)
        for level in range(top):
            ancestor = ((upper >> (level + 1)) << (level + 1)) | (1 << level)
            count += (level > upper_height) & (ancestor <= n)
        depth[above] = count
    return depth


def relabel(tree: Tree, position_of: np.ndarray, key: Hashable) -> Tree:
    """The same shape with node p moved to position_of[p] (`key` names the result)."""
    parent = np.full(tree.size, -1, dtype=np.int64)
    has_parent = tree.parent >= 0
    parent[position_of[has_parent]] = position_of[tree.parent[has_parent]]
    depth = np.empty(tree.size, dtype=np.int64)
    depth[position_of] = tree.depth
    return Tree(parent, depth, key)


def runs(values: list) -> list[tuple[int, int]]:
    """[start, stop) ranges of equal consecutive values."""
    bounds, start = [], 0
    for index in range(1, len(values) + 1):
        if index == len(values) or values[index] != values[start]:
            bounds.append((start, index))
            start = index
    return bounds
