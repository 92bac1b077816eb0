"""`GroupLayout` and `CollectiveCall` check their common case without calls; every case of a grid gives
the same record (and hash) or the same error as the checks in the order they had before (the reference below)."""

from __future__ import annotations

import itertools

import pytest

from ddlsim.core.errors import ConfigError
from ddlsim.core.types import CollectiveCall, CollectiveOp, GroupLayout, Phase, _require


def reference_group(size, stride, num_ranks):
    _require(isinstance(size, int) and size >= 1, "group.size", size, "must be an integer >= 1")
    _require(isinstance(stride, int) and stride >= 1, "group.stride", stride, "must be an integer >= 1")
    if num_ranks is None:
        num_ranks = size * stride
    span = size * stride
    _require(isinstance(num_ranks, int) and num_ranks >= 1 and num_ranks % span == 0, "group.num_ranks", num_ranks,
             f"must be a positive multiple of size x stride = {size} x {stride} = {span}")
    return size, stride, num_ranks, hash((size, stride, num_ranks))


def reference_call(op, size_bytes, group, phase, count, root):
    op, phase = CollectiveOp(op), Phase(phase)
    _require(isinstance(size_bytes, int) and size_bytes >= 0, "size_bytes", size_bytes, "must be an integer >= 0")
    _require(isinstance(count, int) and count >= 1, "count", count, "must be an integer >= 1")
    _require(0 <= root < group.size, "root", root, f"must be in [0, {group.size})")
    if op is CollectiveOp.SEND_RECV:
        _require(group.size == 2, "group.size", group.size, "send_recv needs a group of 2")
    return op, size_bytes, group, phase, count, root


def outcome(make, *args):
    try:
        return "ok", make(*args)
    except (ConfigError, ValueError) as error:
        return type(error).__name__, str(error)


def made_group(size, stride, num_ranks):
    group = GroupLayout(size, stride, num_ranks)
    return group.size, group.stride, group.num_ranks, hash(group)


def made_call(op, size_bytes, group, phase, count, root):
    call = CollectiveCall(op, size_bytes, group, phase, count=count, root=root)
    return call.op, call.size_bytes, call.group, call.phase, call.count, call.root


GROUP_VALUES = [0, 1, 2, 3, 8, -1, True, 2.0]


@pytest.mark.parametrize(("size", "stride"), list(itertools.product(GROUP_VALUES, GROUP_VALUES)))
def test_group_layout_checks_as_before(size, stride):
    for num_ranks in (None, 0, 1, 8, 16, 24, 48, 7, -8, 16.0, True):
        args = (size, stride, num_ranks)
        assert outcome(made_group, *args) == outcome(reference_group, *args)


@pytest.mark.parametrize("op", [*CollectiveOp, "all_reduce", "send_recv", "no_such_op"])
@pytest.mark.parametrize("phase", [*Phase, "forward", "no_such_phase"])
def test_collective_call_checks_as_before(op, phase):
    groups = [GroupLayout(1), GroupLayout(2), GroupLayout(8, 2, 64)]
    for group, size_bytes, count, root in itertools.product(groups, (0, 1, 2**40, -1, 1.5, True),
                                                            (1, 3, 0, -2, 2.0, False), (0, 1, 7, -1, 0.0, 1.5)):
        args = (op, size_bytes, group, phase, count, root)
        expected = outcome(reference_call, *args)
        got = outcome(made_call, *args)
        assert got == expected
        if got[0] == "ok":
            assert type(got[1][0]) is CollectiveOp and type(got[1][3]) is Phase
