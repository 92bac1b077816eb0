"""Caches have one owner (an estimator or the process), are keyed by frozen records, and one call clears them."""

from __future__ import annotations

import ast
import dataclasses
import re
from pathlib import Path

import pytest

import ddlsim
import ddlsim.network
from ddlsim.compute.model import ComputeConfig, ComputeModel
from ddlsim.core.caches import PROCESS_CACHES, FileStamp, Memo, live_caches
from ddlsim.core.registry import DEVICES, MODELS
from ddlsim.report.display import display_table
from ddlsim.workload.parallel import ParallelConfig
from ddlsim.workload.transformer.blocks import KernelBytes

PACKAGE = Path(ddlsim.__file__).resolve().parent
ROOMS = ("workload", "compute", "training", "tasks", "report")
CACHE_DECORATORS = {"lru_cache", "cache"}
CACHE_NAME = re.compile(r"(^|_)(cache[sd]?|memos?)(_|$)", re.IGNORECASE)


def _decorator_name(node: ast.expr) -> str:
    target = node.func if isinstance(node, ast.Call) else node
    return target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", "")


def module_level_caches(path: Path) -> list[str]:
    """`functools` caches on module functions, and module-level dicts named like a cache."""
    found = []
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            found += [f"{path.name}:{node.lineno} @{_decorator_name(d)} {node.name}" for d in node.decorator_list
                      if _decorator_name(d) in CACHE_DECORATORS]
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names = [target.id for target in targets if isinstance(target, ast.Name)]
            found += [f"{path.name}:{node.lineno} {name}" for name in names
                      if CACHE_NAME.search(name)]
    return found


@pytest.mark.parametrize("room", ROOMS)
def test_no_module_level_caches(room):
    files = sorted((PACKAGE / room).rglob("*.py"))
    assert files
    assert [cache for path in files for cache in module_level_caches(path)] == []


def test_the_scan_finds_a_module_level_cache(tmp_path):
    source = tmp_path / "cached.py"
    source.write_text("import functools\n\n@functools.lru_cache(maxsize=8)\ndef f(x):\n    return x\n\n"
                      "_PRICE_CACHE: dict = {}\n")
    assert module_level_caches(source) == ["cached.py:4 @lru_cache f", "cached.py:7 _PRICE_CACHE"]


def default_compute_model() -> ComputeModel:
    return ComputeModel.from_config(ComputeConfig(), DEVICES.make("a100_80gb"))


def test_compute_estimates_are_kept_by_the_model_keyed_by_the_task_itself():
    model = default_compute_model()
    workload = MODELS.make("megatron", target_loss=2.5).build_workload(ParallelConfig(), 80 * 2**30)
    tasks = list(workload.compute_tasks())
    first = [model.estimate(task) for task in tasks]
    memo = model._cache
    assert isinstance(memo, Memo) and 0 < len(memo) <= len(tasks)
    assert all(dataclasses.is_dataclass(key) and type(key).__dataclass_params__.frozen for key in memo._values)
    assert [model.estimate(task) for task in tasks] == first
    assert default_compute_model()._cache is not memo  # one cache per estimator


def test_clear_caches_empties_every_cache_and_prices_stay_the_same(monkeypatch, tmp_path):
    model = default_compute_model()
    workload = MODELS.make("megatron", target_loss=2.5).build_workload(ParallelConfig(), 80 * 2**30)
    tasks = list(workload.compute_tasks())
    before = [model.estimate(task) for task in tasks]
    kernel_bytes = KernelBytes()
    kernel_bytes(tasks[0].signature, tasks[0].phase)
    display_table()
    cleared_network = []
    monkeypatch.setattr(ddlsim.network, "clear_caches", lambda: cleared_network.append(True))
    assert any(len(memo) for memo in live_caches())
    assert PROCESS_CACHES.sizes()["display table"] == 1

    ddlsim.clear_caches()

    assert [len(memo) for memo in live_caches()] == [0] * len(live_caches())
    assert set(PROCESS_CACHES.sizes().values()) == {0}
    assert cleared_network == [True]
    assert [model.estimate(task) for task in tasks] == before


def test_a_bounded_memo_drops_its_oldest_entry():
    memo = Memo("test", maxsize=2)
    for key in "abc":
        memo.put(key, key.upper())
    assert (memo.get("a"), memo.get("b"), memo.get("c"), len(memo)) == (None, "B", "C", 2)
    assert memo.get_or_make("d", lambda: None) is None and len(memo) == 2
    with pytest.raises(ValueError, match="maxsize"):
        Memo("bad", maxsize=0)


def test_a_file_stamp_changes_when_the_file_does(tmp_path):
    path = tmp_path / "rows.csv"
    path.write_text("a\n")
    first = FileStamp.of(path)
    assert FileStamp.of(path) == first
    path.write_text("a,b\n")
    assert FileStamp.of(path) != first
