"""The records of `ddlsim.core.work` check themselves as before their fast paths (issue 34): the same
normal form, the same accepted values, the same `ConfigError` for each bad field."""

from __future__ import annotations

import math

import pytest

from ddlsim.core.errors import ConfigError
from ddlsim.core.types import Phase, Precision
from ddlsim.core.work import ComputeTask, ShardSignature, TaskBlock


def _reference_shape(shape):
    """What `ShardSignature` made of a shape before its fast path."""
    return tuple(sorted((str(k), int(v)) for k, v in dict(shape).items()))


@pytest.mark.parametrize("shape", [
    (("a", 1), ("b", 2)),
    (("b", 2), ("a", 1)),
    {"b": 2, "a": 1},
    (("a", True), ("b", 2)),
    (("a", 1), ("a", 3)),
    (("a", 1.0), ("b", 2)),
    [("a", 1), ("b", 2)],
    (),
])
def test_a_signature_shape_has_one_normal_form(shape):
    signature = ShardSignature("kind", shape, 1, "fp16")
    assert signature.shape == _reference_shape(shape)
    assert all(type(key) is str and type(value) is int for key, value in signature.shape)
    assert signature.precision is Precision.FP16
    assert signature == ShardSignature("kind", _reference_shape(shape), 1, Precision.FP16)


def test_a_signature_refuses_a_local_batch_below_one():
    with pytest.raises(ConfigError, match="local_batch"):
        ShardSignature("kind", (("a", 1),), 0)


@pytest.mark.parametrize(("flop", "memory_bytes", "count", "key"), [
    (math.nan, 0.0, 1, "flop"), (math.inf, 0.0, 1, "flop"), (-1.0, 0.0, 1, "flop"),
    (1.0, math.nan, 1, "memory_bytes"), (1.0, -2.0, 1, "memory_bytes"), (1.0, math.inf, 1, "memory_bytes"),
    (1.0, 1.0, 0, "count"), (1.0, 1.0, 1.5, "count"),
])
def test_a_task_refuses_each_bad_field(flop, memory_bytes, count, key):
    signature = ShardSignature("kind", (("a", 1),), 1)
    with pytest.raises(ConfigError, match=key):
        ComputeTask("t", Phase.FORWARD, signature, flop, memory_bytes, count)


@pytest.mark.parametrize(("flop", "memory_bytes", "count"), [(0.0, 0.0, 1), (3, 4, 2), (1.0, 2, True), (2.5, 0.0, 3)])
def test_a_task_accepts_what_it_accepted(flop, memory_bytes, count):
    task = ComputeTask("t", "backward", ShardSignature("kind", (("a", 1),), 1), flop, memory_bytes, count)
    assert task.phase is Phase.BACKWARD
    assert (task.flop, task.memory_bytes, task.count) == (flop, memory_bytes, count)


@pytest.mark.parametrize("stages", [(), (0,), (3,), (0, 1, 2), tuple(range(1, 16)), (0, 15), [2, 5], (True,)])
def test_a_block_accepts_increasing_stages(stages):
    block = TaskBlock("b", [], stages=stages)
    assert block.stages == tuple(stages) and type(block.stages) is tuple and block.tasks == ()


@pytest.mark.parametrize("stages", [(1, 0), (0, 0), (-1,), (0.0,), (0, 1.0), ("0",)])
def test_a_block_refuses_other_stages(stages):
    with pytest.raises(ConfigError, match="stages"):
        TaskBlock("b", (), stages=stages)


@pytest.mark.parametrize("repeat", [0, 1.5])
def test_a_block_refuses_a_bad_repeat(repeat):
    with pytest.raises(ConfigError, match="repeat"):
        TaskBlock("b", (), repeat=repeat)
