"""Cache keys: a price never depends on what was priced before.

Fabrics cache pattern prices by `Pattern.full_key`, so two patterns with one key must be the same
transfers. The first test builds the compact schedules of every registered algorithm (every op,
several group sizes, single and strided layouts) and checks that no key names two different sets
of transfers; the second is the regression test of a collision that made `best` on the SuperPod
price reduce-scatter lower after an all-reduce had been priced (recursive doubling's ("xor", mask)
pattern and rhd's ("xor", bit) pattern shared a key).
"""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

import ddlsim
import ddlsim.network
from ddlsim.app.catalog import load_all
from ddlsim.core.errors import InfeasibleError
from ddlsim.core.registry import ALGORITHMS
from ddlsim.core.types import CollectiveOp, GroupLayout
from ddlsim.network import CollectiveEstimator, make_fabric
from ddlsim.network.collectives.base import ScheduleRequest
from ddlsim.network.patterns import Mesh
from ddlsim.network.placing import place_ranks
from ddlsim.network.verify import fabric_for

load_all()
SIZES = (2, 6, 8, 12, 16, 32, 48, 64)


def _contents(pattern) -> str:
    """A digest of the transfers a pattern stands for (order-free), its classes and multicast flag."""
    digest = hashlib.blake2b(digest_size=16)
    digest.update(repr((type(pattern).__name__, pattern.group_size, pattern.multicast)).encode())
    if isinstance(pattern, Mesh):
        digest.update(np.ascontiguousarray(pattern.blocks).tobytes())
        digest.update(repr(float(pattern.weight)).encode())
        return digest.hexdigest()
    listed = pattern.pairs()
    classes = listed.classes if listed.classes is not None else np.full(listed.src.size, -1)
    table = np.stack([listed.src, listed.dst, classes, listed.weight.view(np.int64)], axis=1)
    digest.update(np.ascontiguousarray(table[np.lexsort(table.T[::-1])]).tobytes())
    return digest.hexdigest()


def test_one_key_names_one_set_of_transfers():
    seen: dict = {}
    checked = 0
    for entry in ALGORITHMS:
        algorithm = ALGORITHMS.make(entry.name)
        if getattr(algorithm, "is_selector", False):
            continue
        for op in sorted(algorithm.ops, key=lambda op: op.value):
            for size in SIZES:
                fabric = fabric_for(algorithm, op, 2 * size)
                if fabric is None:
                    continue
                for stride in (1, 2):
                    layout = GroupLayout(size, stride, size * stride)
                    if layout.job_ranks > fabric.num_nodes or algorithm.supports(fabric, op, size) is not None:
                        continue
                    placement = place_ranks(fabric, layout.job_ranks)
                    request = ScheduleRequest(op, size, 0, 3_000_000, fabric, layout, placement)
                    for step in algorithm.compact(request).steps:
                        if not step.is_communication:
                            continue
                        where = f"{entry.name} {op.value} n={size}"
                        first = seen.setdefault(step.pattern.full_key, (_contents(step.pattern), where))
                        assert first[0] == _contents(step.pattern), (
                            f"pattern key {step.pattern.full_key!r} names different transfers in {first[1]} "
                            f"and {where}")
                        checked += 1
    assert checked > 1000


@pytest.mark.parametrize("fabric_name", ["superpod", "ideal", "torus2d"])
def test_best_prices_do_not_depend_on_the_order_of_calls(fabric_name):
    fabric = make_fabric(fabric_name)
    layout, size_bytes = GroupLayout(8, 2, 16), 26_214_400
    ops = [CollectiveOp.ALL_REDUCE, CollectiveOp.REDUCE_SCATTER, CollectiveOp.ALL_GATHER, CollectiveOp.BROADCAST]
    prices = []
    for order in (ops, ops[::-1]):
        ddlsim.clear_caches()
        estimator = CollectiveEstimator(fabric, "best")
        prices.append({op: estimator.estimate(op, size_bytes, layout=layout) for op in order})
    for op in ops:
        assert prices[0][op].time_s == prices[1][op].time_s, op
        assert prices[0][op].algorithm == prices[1][op].algorithm, op


@pytest.mark.parametrize("fabric_name", ["superpod", "torus2d", "ramp"])
@pytest.mark.parametrize("op", [CollectiveOp.ALL_REDUCE, CollectiveOp.ALL_GATHER, CollectiveOp.ALL_TO_ALL,
                                CollectiveOp.BROADCAST, CollectiveOp.GATHER])
def test_best_with_pruning_is_the_fastest_candidate_priced_in_full(fabric_name, op):
    """`best` gives up candidates whose partial price already exceeds the best found: its choice and
    price must be those of pricing every candidate to the end (ties to the first name)."""
    fabric = make_fabric(fabric_name)
    for size_bytes, layout in ((4096, GroupLayout(64)), (10**8, GroupLayout(32, 4, 128)), (10**9, GroupLayout(512))):
        chosen = CollectiveEstimator(fabric, "best").estimate(op, size_bytes, layout=layout)
        full = []
        for candidate in ALGORITHMS.make("best").candidates(op):
            if candidate.supports(fabric, op, layout.size) is not None:
                continue
            try:
                result = CollectiveEstimator(fabric, candidate).estimate(op, size_bytes, layout=layout)
            except InfeasibleError:
                continue
            full.append((result.time_s, candidate.name))
        assert (chosen.time_s, chosen.algorithm) == min(full)


# Another helper's modules, not yet moved to Memos: RAMP job shapes (cleared by network.clear_caches)
# and TopoOpt's reconfiguration rounds.
NOT_YET_MEMOS = {"fabrics/ramp/placement.py", "fabrics/topoopt/reconfig_sim.py"}


def test_network_keeps_no_module_level_caches():
    """Caches of the network room are Memos (PROCESS_CACHES or an estimator's), which
    ddlsim.clear_caches() empties: no functools caches, no module-level dicts."""
    import ast
    from pathlib import Path

    root = Path(ddlsim.network.__file__).resolve().parent
    found = []
    for path in sorted(root.rglob("*.py")):
        if path.relative_to(root).as_posix() in NOT_YET_MEMOS:
            continue
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.FunctionDef):
                found += [f"{path.name}:{node.lineno}" for d in node.decorator_list
                          if "cache" in ast.unparse(d)]
            elif isinstance(node, (ast.Assign, ast.AnnAssign)) and isinstance(node.value, (ast.Dict, ast.Call)):
                value = ast.unparse(node.value)
                if value == "{}" or value.startswith(("dict(", "OrderedDict(")):
                    found.append(f"{path.name}:{node.lineno}")
    assert found == []
