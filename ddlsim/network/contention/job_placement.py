"""Where several jobs sit on one fabric: one `Placement` per job, on disjoint nodes.

The fabric's nodes are handed out in *slots* of `slot_nodes` consecutive nodes (a server's GPUs:
two jobs never share a server), and a job of n ranks takes ceil(n / slot_nodes) slots, its ranks
filling them in order. Policies:

- ``packed``: each job on the lowest free slots, in job order (consecutive when nothing is in
  the way), so a job fills the fastest domains first and jobs share as little as they can;
- ``spread``: the slots of each job dealt round-robin across the fabric's top-level domains (the
  largest domain below the whole fabric: pods of a fat-tree), so every job spans as many of them
  as it can and jobs share the upper tiers;
- ``random``: each job on slots drawn at random from the free ones (seeded by ``seed``): a
  fragmented cluster.

Jobs may also name their nodes (``explicit[j]``); those are claimed first, the policy places
the others on what is left. A job that does not fit is an `InfeasibleError`; two jobs naming the
same node, or an unknown policy, a `ConfigError` naming the key.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ddlsim.core.errors import ConfigError, InfeasibleError
from ddlsim.network.int_arrays import all_distinct
from ddlsim.network.placement import Placement

POLICIES = ("packed", "spread", "random")


def check_policy(policy: str, key: str = "task.placement") -> str:
    if policy not in POLICIES:
        raise ConfigError(key, policy, f"unknown placement policy; choose one of {', '.join(POLICIES)}")
    return policy


def top_domain_nodes(domain_sizes: Sequence[int], num_nodes: int) -> int:
    """The largest declared domain smaller than the fabric (the whole fabric when there is none)."""
    below = [size for size in domain_sizes if size < num_nodes]
    return max(below) if below else num_nodes


def place_jobs_on_nodes(num_nodes: int, sizes: Sequence[int], policy: str, *, slot_nodes: int = 1,
                        domain_nodes: int | None = None, seed: int = 0,
                        explicit: Sequence[Sequence[int] | None] | None = None,
                        names: Sequence[str] | None = None, key: str = "task.placement") -> list[Placement]:
    """One placement per job of `sizes[j]` ranks on a fabric of `num_nodes` nodes (module docstring).

    `domain_nodes`: the top-level domain ``spread`` deals across; `names[j]` what errors call job j.
    """
    check_policy(policy, key)
    if slot_nodes < 1 or num_nodes % slot_nodes:
        raise ConfigError("slot_nodes", slot_nodes, f"must be >= 1 and divide the fabric's {num_nodes} nodes")
    names = list(names) if names is not None else [f"job {index}" for index in range(len(sizes))]
    explicit = list(explicit) if explicit is not None else [None] * len(sizes)
    free = np.ones(num_nodes, dtype=bool)
    nodes_of: list[np.ndarray | None] = [None] * len(sizes)
    for job, given in enumerate(explicit):
        if given is not None:
            nodes_of[job] = _claim(np.asarray(given, dtype=np.int64), sizes[job], free, names[job], num_nodes)
    slots_free = free.reshape(-1, slot_nodes).all(axis=1)
    free_slots = slots_free.sum()
    rng = np.random.default_rng(seed)
    domain = max(1, (domain_nodes or num_nodes) // slot_nodes)
    for job, size in enumerate(sizes):
        if nodes_of[job] is not None:
            continue
        need = -(-size // slot_nodes)
        if need > free_slots:
            raise InfeasibleError(f"{names[job]} ({size} ranks, {need} slots of {slot_nodes} nodes) does not fit: "
                                  f"{free_slots * slot_nodes} of the fabric's {num_nodes} nodes are left free by "
                                  f"the jobs before it (task.jobs)")
        slots = _choose(policy, np.flatnonzero(slots_free), need, domain, rng)
        slots_free[slots] = False
        free_slots -= need
        nodes = (slots[:, None] * slot_nodes + np.arange(slot_nodes)[None, :]).ravel()[:size]
        nodes_of[job] = nodes
    return [Placement(size, nodes) for size, nodes in zip(sizes, nodes_of)]


def _claim(nodes: np.ndarray, size: int, free: np.ndarray, name: str, num_nodes: int) -> np.ndarray:
    if nodes.shape != (size,):
        raise ConfigError(f"{name}.nodes", nodes.size, f"must list one node per rank ({size})")
    if nodes.size and (nodes.min() < 0 or nodes.max() >= num_nodes):
        raise InfeasibleError(f"{name}.nodes names a node outside the fabric's {num_nodes} nodes")
    if not all_distinct(nodes):
        raise ConfigError(f"{name}.nodes", "duplicates", "a node can hold one rank")
    taken = nodes[~free[nodes]]
    if taken.size:
        raise ConfigError(f"{name}.nodes", int(taken[0]),
                          "overlaps an earlier job's placement; jobs need disjoint nodes")
    free[nodes] = False
    return nodes


def _choose(policy: str, free: np.ndarray, need: int, domain: int, rng: np.random.Generator) -> np.ndarray:
    if policy == "packed":
        return free[:need]
    if policy == "random":
        return np.sort(rng.choice(free, size=need, replace=False))
    # spread: deal one slot per top-level domain in turn, starting each round from the emptiest
    by_domain: dict[int, list[int]] = {}
    for slot in free.tolist():
        by_domain.setdefault(slot // domain, []).append(slot)
    chosen: list[int] = []
    queues = [list(reversed(slots)) for _, slots in sorted(by_domain.items())]
    while len(chosen) < need:
        queues.sort(key=len, reverse=True)
        for queue in queues:
            if queue and len(chosen) < need:
                chosen.append(queue.pop())
        queues = [queue for queue in queues if queue]
    return np.array(chosen, dtype=np.int64)
