import pytest

from ddlsim.core.errors import ConfigError
from ddlsim.core.types import CollectiveCall, CollectiveEstimate, CollectiveOp, GroupLayout, Phase
from ddlsim.core.work import ShardSignature


def test_tensor_parallel_groups_are_consecutive():
    layout = GroupLayout(size=8, stride=1, num_ranks=64)
    assert layout.num_groups == 8
    assert layout.ranks(0) == tuple(range(8))
    assert layout.ranks(3) == tuple(range(24, 32))


def test_data_parallel_groups_are_strided():
    layout = GroupLayout(size=8, stride=8, num_ranks=64)
    assert layout.ranks(0) == (0, 8, 16, 24, 32, 40, 48, 56)
    assert layout.ranks(5) == (5, 13, 21, 29, 37, 45, 53, 61)


@pytest.mark.parametrize(("size", "stride", "num_ranks"), [(4, 1, 16), (2, 4, 16), (4, 2, 32), (3, 5, 30), (1, 1, 7)])
def test_groups_partition_the_job_and_position_inverts_ranks(size, stride, num_ranks):
    layout = GroupLayout(size, stride, num_ranks)
    seen = [rank for group in layout.groups() for rank in group]
    assert sorted(seen) == list(range(num_ranks))
    for index, group in enumerate(layout.groups()):
        for position, rank in enumerate(group):
            assert layout.position(rank) == (index, position)


def test_layout_rejects_a_job_it_does_not_tile():
    with pytest.raises(ConfigError, match="group.num_ranks"):
        GroupLayout(size=8, stride=2, num_ranks=24)


@pytest.mark.parametrize(
    ("op", "input_bytes", "output_bytes"),
    [(CollectiveOp.ALL_REDUCE, 800, 800), (CollectiveOp.REDUCE_SCATTER, 800, 100),
     (CollectiveOp.ALL_GATHER, 100, 800), (CollectiveOp.ALL_TO_ALL, 800, 800),
     (CollectiveOp.BROADCAST, 800, 800), (CollectiveOp.SCATTER, 800, 100), (CollectiveOp.BARRIER, 0, 0)],
)
def test_size_bytes_follows_nccl_tests_at_the_root(op, input_bytes, output_bytes):
    assert op.input_bytes(800, 8) == input_bytes
    assert op.output_bytes(800, 8) == output_bytes


def test_rooted_ops_differ_away_from_the_root():
    assert CollectiveOp.BROADCAST.input_bytes(800, 8, is_root=False) == 0
    assert CollectiveOp.REDUCE.output_bytes(800, 8, is_root=False) == 0
    assert CollectiveOp.GATHER.input_bytes(800, 8, is_root=False) == 100
    assert CollectiveOp.GATHER.output_bytes(800, 8, is_root=True) == 800
    assert CollectiveOp.REDUCE.reduces and not CollectiveOp.GATHER.reduces
    assert CollectiveOp.SCATTER.is_rooted and not CollectiveOp.ALL_TO_ALL.is_rooted


def test_collective_call_checks_itself():
    group = GroupLayout(size=4, num_ranks=8)
    call = CollectiveCall("all_reduce", 1024, group, "backward")
    assert call.op is CollectiveOp.ALL_REDUCE and call.phase is Phase.BACKWARD
    with pytest.raises(ConfigError, match="size_bytes"):
        CollectiveCall(CollectiveOp.ALL_REDUCE, -1, group)
    with pytest.raises(ConfigError, match="root"):
        CollectiveCall(CollectiveOp.BROADCAST, 10, group, root=4)
    with pytest.raises(ConfigError, match="send_recv"):
        CollectiveCall(CollectiveOp.SEND_RECV, 10, group)


def test_shard_signature_key_is_stable_under_shape_order():
    a = ShardSignature("megatron", (("d_model", 1024), ("heads", 16)), local_batch=8)
    b = ShardSignature("megatron", (("heads", 16), ("d_model", 1024)), local_batch=8)
    assert a == b and a.key() == b.key() == "megatron|d_model=1024,heads=16|b=8|fp16|nockpt"


def test_estimate_rejects_negative_times():
    with pytest.raises(ConfigError, match="latency_s"):
        CollectiveEstimate("all_reduce", 1, 2, "ring", "ideal", 1.0, -1.0, 0.0, 0.0, 2)
