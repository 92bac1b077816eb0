"""Where a job's ranks sit on a fabric's nodes, and how one group's pattern covers the whole job.

A `GroupLayout` (from `ddlsim.core.types`) says which job ranks form each group; every group of the
layout runs the same schedule at the same time. `Placement` maps job ranks to fabric nodes.
The greedy placement of the electrical fabrics is the identity: nodes are numbered so that
consecutive nodes share the fastest domain, so filling them in order fills high-bandwidth
domains first.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass

import numpy as np

from ddlsim.core.errors import ConfigError, InfeasibleError
from ddlsim.core.types import GroupLayout
from ddlsim.network.int_arrays import all_distinct


@dataclass(frozen=True, eq=False)
class Placement:
    """Job rank r runs on fabric node ``nodes[r]`` (``nodes=None``: node r)."""

    num_ranks: int
    nodes: np.ndarray | None = None
    key: Hashable = None

    def __post_init__(self) -> None:
        if self.nodes is not None:
            nodes = np.ascontiguousarray(self.nodes, dtype=np.int64)
            if nodes.shape != (self.num_ranks,):
                raise ConfigError("placement.nodes", nodes.shape, f"needs one node per rank ({self.num_ranks})")
            if not all_distinct(nodes):
                raise ConfigError("placement.nodes", "duplicates", "two ranks cannot share one node")
            object.__setattr__(self, "nodes", nodes)
        if self.key is None:
            key = ("identity", self.num_ranks) if self.nodes is None else ("nodes", self.nodes.tobytes())
            object.__setattr__(self, "key", key)

    @classmethod
    def identity(cls, num_ranks: int, num_nodes: int, fabric: str = "fabric") -> Placement:
        if num_ranks > num_nodes:
            raise InfeasibleError(f"{num_ranks} ranks do not fit on {fabric}, which has {num_nodes} nodes "
                                  f"({num_ranks - num_nodes} too many)")
        return cls(num_ranks)

    def node_of(self, ranks: np.ndarray) -> np.ndarray:
        return ranks if self.nodes is None else self.nodes[ranks]


def group_bases(layout: GroupLayout) -> np.ndarray:
    """Job rank of position 0 of every group, in group order."""
    groups = np.arange(layout.num_groups, dtype=np.int64)
    span = layout.size * layout.stride
    return (groups // layout.stride) * span + groups % layout.stride


def job_ranks(layout: GroupLayout, positions: np.ndarray) -> np.ndarray:
    """Job ranks of `positions` in every group: shape (num_groups, len(positions))."""
    positions = np.asarray(positions, dtype=np.int64)
    return group_bases(layout)[:, None] + positions[None, :] * layout.stride


def group_hierarchy(layout: GroupLayout, placement: Placement, domain_sizes: tuple[int, ...]) -> tuple[int, ...]:
    """Dimensions of a group seen through a fabric's nested domains (fastest first).

    Positions of group 0 are mapped to nodes; at each domain level, the run of consecutive
    positions sharing one domain gives a dimension. Levels where the runs are not all equal (a
    group straddling domains irregularly) are skipped. The product of the result is the size.
    """
    size = layout.size
    nodes = placement.node_of(job_ranks(layout, np.arange(size))[0])
    dims: list[int] = []
    covered = 1
    for domain in sorted(set(domain_sizes)):
        ids = nodes // domain
        run = _uniform_run(ids)
        if run is None or run <= covered or run % covered or size % run:
            continue
        dims.append(run // covered)
        covered = run
    if covered < size:
        dims.append(size // covered)
    return tuple(dims) if dims else (size,)


def _uniform_run(ids: np.ndarray) -> int | None:
    """Length of the runs of equal consecutive ids, if every run has the same length."""
    steps = np.diff(ids)
    changes = np.flatnonzero(steps != 0) + 1
    bounds = np.concatenate([[0], changes, [ids.size]])
    lengths = np.diff(bounds)
    if lengths.size == 0 or np.any(lengths != lengths[0]):
        return None
    # Runs must be distinct domains: immediate when ids only grow, else count them.
    if not np.all(steps >= 0) and np.unique(ids).size != lengths.size:
        return None
    return int(lengths[0])
