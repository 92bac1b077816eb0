"""Every registered algorithm, every op it declares, every group size 2..64 (and a few larger):
its explicit schedule, run on random arrays, does exactly what the op means.

A new algorithm is verified by being registered: it is listed here through the registry and run
on the fabric its `verification_fabric` gives (an ideal switch unless it is co-designed), or else
on the first registered fabric that supports it (see `ddlsim.network.verify.fabric_for`).
"""

from __future__ import annotations

import pytest

from ddlsim.app.catalog import load_all
from ddlsim.core.registry import ALGORITHMS
from ddlsim.core.types import CollectiveOp
from ddlsim.network.collectives.base import ScheduleRequest
from ddlsim.network.placing import place_ranks
from ddlsim.network.verify import ScheduleError, fabric_for, verify_explicit

load_all()
ALGORITHM_NAMES = [entry.name for entry in ALGORITHMS if not getattr(ALGORITHMS.make(entry.name), "is_selector", False)]
CASES = [(name, op) for name in ALGORITHM_NAMES for op in sorted(ALGORITHMS.make(name).ops)]
ROOTED = {CollectiveOp.BROADCAST, CollectiveOp.REDUCE, CollectiveOp.GATHER, CollectiveOp.SCATTER}


def roots(op: CollectiveOp, n: int) -> list[int]:
    """Root 0 always; for rooted ops also the last and a middle rank on every fifth size."""
    if op not in ROOTED or n % 5:
        return [0]
    return sorted({0, n // 2, n - 1})


@pytest.mark.parametrize(("name", "op"), CASES, ids=[f"{name}-{op.value}" for name, op in CASES])
def test_explicit_schedule_does_what_the_op_means(name, op):
    algorithm = ALGORITHMS.make(name)
    verified = []
    for n in algorithm.verification_sizes():
        fabric = fabric_for(algorithm, op, n)
        if fabric is None:
            continue
        for root in roots(op, n):
            request = ScheduleRequest.single_group(op, n, fabric, root=root, placement=place_ranks(fabric, n))
            schedule = algorithm.explicit(request)
            verify_explicit(schedule, seed=n)
        verified.append(n)
    assert verified, f"{name} declares {op.value} but supports none of its verification sizes"


def test_send_recv_is_one_transfer_for_every_algorithm():
    for name in ALGORITHM_NAMES:
        algorithm = ALGORITHMS.make(name)
        fabric = fabric_for(algorithm, CollectiveOp.SEND_RECV, 2)
        if fabric is None:
            continue
        for sender in (0, 1):
            placement = place_ranks(fabric, 2)
            request = ScheduleRequest.single_group("send_recv", 2, fabric, root=sender, placement=placement)
            schedule = algorithm.explicit(request)
            verify_explicit(schedule)
            assert schedule.num_steps == 1


def test_the_executor_catches_a_broken_schedule():
    algorithm = ALGORITHMS.make("ring")
    fabric = algorithm.verification_fabric(8)
    good = algorithm.explicit(ScheduleRequest.single_group("all_reduce", 8, fabric))
    broken = type(good)(good.op, good.group_size, good.algorithm, good.steps[:-1], good.num_chunks,
                        good.chunk_fraction, good.root, good.num_slots)
    with pytest.raises(ScheduleError, match="wrong data"):
        verify_explicit(broken)
    reduce_scatter = algorithm.explicit(ScheduleRequest.single_group("reduce_scatter", 8, fabric))
    last_step_twice = reduce_scatter.steps + reduce_scatter.steps[-1:] + good.steps[7:]
    twice = type(good)(good.op, 8, "ring", last_step_twice, good.num_chunks, good.chunk_fraction, 0, good.num_slots)
    with pytest.raises(ScheduleError):
        verify_explicit(twice)


def test_a_barrier_that_skips_a_rank_is_caught():
    algorithm = ALGORITHMS.make("bruck")
    fabric = algorithm.verification_fabric(8)
    barrier = algorithm.explicit(ScheduleRequest.single_group("barrier", 8, fabric))
    short = type(barrier)(barrier.op, 8, "bruck", barrier.steps[:-1], barrier.num_chunks, barrier.chunk_fraction,
                          0, barrier.num_slots)
    with pytest.raises(ScheduleError, match="without hearing"):
        verify_explicit(short)
