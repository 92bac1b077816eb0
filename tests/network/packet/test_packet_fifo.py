"""The batched FIFO bank behaves like a set of plain Python queues."""

from collections import deque

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from ddlsim.network.packet.fifo import FifoBank, occurrence_rank


def test_occurrence_rank():
    assert occurrence_rank(np.array([3, 1, 3, 3, 1, 0])).tolist() == [0, 0, 1, 2, 1, 0]
    assert occurrence_rank(np.array([], dtype=np.int64)).tolist() == []


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.lists(st.integers(0, 5), max_size=12)), min_size=1, max_size=30),
       st.booleans())
def test_matches_python_deques(operations, distinct_path):
    bank = FifoBank(6, {"value": np.int64}, initial_capacity=4)
    reference = [deque() for _ in range(6)]
    counter = 0
    for is_push, queues in operations:
        if is_push:
            queues = np.array(sorted(set(queues)) if distinct_path else queues, dtype=np.int64)
            values = np.arange(counter, counter + queues.size)
            counter += queues.size
            ids = bank.allocate(queues.size, value=values)
            bank.enqueue(queues, ids, distinct=distinct_path)
            for q, v in zip(queues.tolist(), values.tolist()):
                reference[q].append(v)
        else:
            queues = np.array(sorted({q for q in queues if reference[q]}), dtype=np.int64)
            popped = bank.pop(queues)
            assert bank.fields["value"][popped].tolist() == [reference[q].popleft() for q in queues.tolist()]
            bank.release(popped)
        for q in range(6):
            assert [int(bank.fields["value"][i]) for i in bank.queue_contents(q)] == list(reference[q])
            assert bank.length[q] == len(reference[q])
    assert bank.num_live == sum(len(r) for r in reference)


def test_pool_grows_and_recycles():
    bank = FifoBank(2, {"x": np.float64}, initial_capacity=16)
    ids = bank.allocate(100, x=np.arange(100.0))
    bank.enqueue(np.zeros(100, dtype=np.int64), ids)
    assert bank.capacity >= 100 and bank.num_live == 100
    out = np.concatenate([bank.pop(np.array([0])) for _ in range(100)])
    assert bank.fields["x"][out].tolist() == list(range(100))
    bank.release(out)
    assert bank.num_live == 0 and bank.length[0] == 0 and bank.head[0] == -1
