"""Binary tree and double binary tree collectives (whole messages, level by level).

`binary_tree` (a heap rooted at the root; 2 ceil(log2 n) steps for all_reduce, as in WRHT's
Table 1 "BT"): reduce sends each subtree's partial sum one level up per step, deepest first (a
parent adds its two children's buffers and its own: 3-to-1); broadcast copies down, a parent
sending the same data to both children; all_reduce / barrier = reduce + broadcast; gather and
scatter move whole subtrees' blocks; all_gather = gather + broadcast; reduce_scatter = reduce +
scatter. No all_to_all.

`double_binary_tree` (Sanders, Speck and Traeff 2009, as in NCCL): two in-order binary trees
in which the leaves of one are inner nodes of the other (the second is the first shifted by one
position, or mirrored for odd n); each tree reduces and broadcasts half of the buffer at once,
so every rank sends and receives about one buffer per phase. all_reduce and barrier only.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ddlsim.core.registry import ALGORITHMS
from ddlsim.core.types import CollectiveOp
from ddlsim.network.collectives.base import CollectiveAlgorithm, ScheduleRequest
from ddlsim.network.collectives.builder import ScheduleBuilder
from ddlsim.network.collectives.tree_shapes import Tree, heap_tree, inorder_tree, relabel, runs
from ddlsim.network.patterns import Pairs, class_order
from ddlsim.network.schedule import CompactStep, ExplicitSchedule, Reduction, Schedule

Op = CollectiveOp


def _level_steps(builder: ScheduleBuilder, pattern: Pairs, fraction: float, classes: np.ndarray,
                 reductions: list[tuple[Reduction, ...]], label: str, explicit_step) -> None:
    """One compact step per run of equal reductions; repetition i activates class classes[i]."""
    for start, stop in runs(reductions):
        window = classes[start:stop]
        step = CompactStep(pattern, fraction, stop - start, windows=(window, window), reductions=reductions[start],
                           label=label)
        builder.add(step, lambda step=step, window=window: [explicit_step(step, int(c)) for c in window])


def tree_phase(builder: ScheduleBuilder, tree: Tree, up: bool, blocks: bool) -> None:
    """One pass over a tree: up (towards the root, reducing unless `blocks`) or down (copying).

    `blocks`: move each subtree's blocks (gather / scatter, C = n) instead of the whole buffer.
    """
    n, height = builder.n, tree.height
    child, parent = tree.edges()
    depth = tree.depth[child]
    classes = height - depth if up else depth - 1
    sizes = tree.subtree_sizes()[child] if blocks else np.ones(child.size)
    whole = builder.num_chunks
    fraction = builder.payload / whole if blocks else builder.payload
    src, dst = (child, parent) if up else (parent, child)
    kind = ("up" if up else "down", "blocks" if blocks else "whole")
    multicast = not up and not blocks
    pattern = Pairs(n, src, dst, sizes.astype(np.float64), classes, multicast=multicast,
                    key=("tree", kind, tree.key))
    order = np.arange(height)
    reduce = up and not blocks
    fan_in = tree.children_count + 1
    reductions = []
    for step_class in order:
        receivers = dst[classes == step_class]
        most = int(fan_in[receivers].max()) if reduce and receivers.size else 0
        reductions.append((Reduction(most, fraction),) if most >= 2 else ())
    descendants = tree.descendants() if builder.explicit and blocks else None

    def explicit_step(step: CompactStep, step_class: int):
        active = classes == step_class
        senders, receivers, movers = src[active], dst[active], child[active]
        lists = [descendants[node] for node in movers] if blocks else [np.arange(whole) for _ in movers]
        counts = np.array([chunks.size for chunks in lists], dtype=np.int64)
        chunks = np.concatenate(lists) if lists else np.zeros(0, dtype=np.int64)
        return builder.rows(np.repeat(senders, counts), np.repeat(receivers, counts), chunks, chunks, reduce, step,
                            multicast)

    _level_steps(builder, pattern, fraction, order, reductions, f"tree {kind[0]} {kind[1]}", explicit_step)


@dataclass
class BinaryTreeConfig:
    name: str = "binary_tree"


@ALGORITHMS.register("binary_tree", BinaryTreeConfig)
@dataclass(frozen=True)
class BinaryTree(CollectiveAlgorithm):
    """Binary tree: whole buffers up (reduce) and down (broadcast), one level per step."""

    name: str = "binary_tree"
    ops = frozenset(CollectiveOp) - {Op.SEND_RECV, Op.ALL_TO_ALL}

    @classmethod
    def from_config(cls, config: BinaryTreeConfig) -> BinaryTree:
        return cls(config.name)

    def _build(self, request: ScheduleRequest, explicit: bool) -> ScheduleBuilder:
        op = request.op
        blocks_ops = (Op.GATHER, Op.SCATTER, Op.ALL_GATHER, Op.REDUCE_SCATTER)
        chunks = request.group_size if op in blocks_ops else 1
        builder = ScheduleBuilder(request, self.name, chunks, explicit=explicit)
        tree = heap_tree(request.group_size, request.root)
        if op in (Op.REDUCE, Op.ALL_REDUCE, Op.BARRIER, Op.REDUCE_SCATTER):
            tree_phase(builder, tree, up=True, blocks=False)
        if op in (Op.GATHER, Op.ALL_GATHER):
            tree_phase(builder, tree, up=True, blocks=True)
        if op in (Op.BROADCAST, Op.ALL_REDUCE, Op.BARRIER, Op.ALL_GATHER):
            tree_phase(builder, tree, up=False, blocks=False)
        if op in (Op.SCATTER, Op.REDUCE_SCATTER):
            tree_phase(builder, tree, up=False, blocks=True)
        return builder

    def build_compact(self, request: ScheduleRequest) -> Schedule:
        return self._build(request, False).schedule()

    def build_explicit(self, request: ScheduleRequest) -> ExplicitSchedule:
        return self._build(request, True).explicit_schedule()


def double_trees(n: int) -> tuple[Tree, Tree]:
    first = inorder_tree(n)
    positions = np.arange(n, dtype=np.int64)
    moved = (positions + 1) % n if n % 2 == 0 else n - 1 - positions
    return first, relabel(first, moved, ("inorder", n, "shifted" if n % 2 == 0 else "mirrored"))


@dataclass(frozen=True)
class _DoubleEdges:
    """The edges of both trees (tree 0's, then tree 1's), with each edge's tree and child depth."""

    child: np.ndarray
    parent: np.ndarray
    chunk: np.ndarray
    depth: np.ndarray
    height: int

    @classmethod
    def of(cls, trees: tuple[Tree, Tree]) -> _DoubleEdges:
        parts = [tree.edges() for tree in trees]
        return cls(np.concatenate([edges[0] for edges in parts]), np.concatenate([edges[1] for edges in parts]),
                   np.repeat(np.arange(len(parts)), [edges[0].size for edges in parts]),
                   np.concatenate([tree.depth[edges[0]] for tree, edges in zip(trees, parts)]),
                   max(tree.height for tree in trees))


def _double_phase(builder: ScheduleBuilder, trees: tuple[Tree, Tree], edges: _DoubleEdges, up: bool) -> None:
    n, height, chunk = builder.n, edges.height, edges.chunk
    classes = height - edges.depth if up else edges.depth - 1
    src, dst = (edges.child, edges.parent) if up else (edges.parent, edges.child)
    fraction = builder.payload / 2
    pattern = Pairs(n, src, dst, 1.0, classes, key=("double tree", "up" if up else "down"), validate=False)
    reductions = [()] * height if not up else _double_reductions(trees, height, fraction)

    def explicit_step(step: CompactStep, step_class: int):
        active = classes == step_class
        return builder.rows(src[active], dst[active], chunk[active], chunk[active], up, step)

    _level_steps(builder, pattern, fraction, np.arange(height), reductions, f"double tree {'up' if up else 'down'}",
                 explicit_step)


def _double_reductions(trees: tuple[Tree, Tree], height: int, fraction: float) -> list[tuple[Reduction, ...]]:
    """Per level of the reduction, the reductions of the busiest receiver (most traffic, the lowest
    rank on ties): one per tree it receives in, of fan-in its children in that tree + 1. A node
    receives from all its children of a tree in one level (they share a depth), so each tree's
    children counts give every level's receivers without listing an edge."""
    n = trees[0].size
    counts = [tree.children_count for tree in trees]
    levels = [height - 1 - tree.depth for tree in trees]
    inner = [count > 0 for count in counts]
    both = inner[0] & inner[1] & (levels[0] == levels[1])
    traffic = [np.where(inner[index], counts[index] + 2, 0) for index in range(2)]
    # One entry per (level, receiver): a receiver in both trees at one level is one entry.
    alone = [np.flatnonzero(inner[0]), np.flatnonzero(inner[1] & ~both)]
    receiver = np.concatenate(alone)
    level = np.concatenate([levels[0][alone[0]], levels[1][alone[1]]])
    load = np.concatenate([traffic[0][alone[0]] + np.where(both[alone[0]], traffic[1][alone[0]], 0),
                           traffic[1][alone[1]]])
    score = load * n + (n - 1 - receiver)  # the most traffic first, then the lowest rank
    order = class_order(level, height)
    bounds = np.searchsorted(level[order], np.arange(height + 1))
    reductions: list[tuple[Reduction, ...]] = []
    for step_class in range(height):
        if bounds[step_class] == bounds[step_class + 1]:
            reductions.append(())
            continue
        busiest = n - 1 - int(score[order[bounds[step_class]:bounds[step_class + 1]]].max()) % n
        reductions.append(tuple(Reduction(int(counts[index][busiest]) + 1, fraction) for index in range(2)
                                if inner[index][busiest] and levels[index][busiest] == step_class))
    return reductions


@dataclass
class DoubleBinaryTreeConfig:
    name: str = "double_binary_tree"


@ALGORITHMS.register("double_binary_tree", DoubleBinaryTreeConfig)
@dataclass(frozen=True)
class DoubleBinaryTree(CollectiveAlgorithm):
    """Two complementary binary trees, each reducing and broadcasting half of the buffer."""

    name: str = "double_binary_tree"
    ops = frozenset({Op.ALL_REDUCE, Op.BARRIER})

    @classmethod
    def from_config(cls, config: DoubleBinaryTreeConfig) -> DoubleBinaryTree:
        return cls(config.name)

    def _build(self, request: ScheduleRequest, explicit: bool) -> ScheduleBuilder:
        builder = ScheduleBuilder(request, self.name, 2, explicit=explicit)
        trees = double_trees(request.group_size)
        edges = _DoubleEdges.of(trees)
        _double_phase(builder, trees, edges, up=True)
        _double_phase(builder, trees, edges, up=False)
        return builder

    def build_compact(self, request: ScheduleRequest) -> Schedule:
        return self._build(request, False).schedule()

    def build_explicit(self, request: ScheduleRequest) -> ExplicitSchedule:
        return self._build(request, True).explicit_schedule()
