"""The Megatron-2021 flavour of the transformer generator builds what the old generator built, bit for bit.

`megatron2021_snapshot.json` is a FROZEN snapshot of the old generator's output
(`ddlsim/workload/megatron_partition.py` and `megatron_tasks.py`, removed by issue 31 step 7),
written once by ``PYTHONPATH=. python tests/workload/megatron2021_cases.py`` on branch
house-transformer before the generators were merged. Its cases (`megatron2021_cases.cases`) are a
grid of target losses x parallel settings of ``model=megatron`` (sequence parallelism,
checkpointing off, offloaded checkpoints, fixed TP, fixed DP and local batch, DP not a power of two,
a GPU cap), its variants (widened heads, RAMP 7.2.1's all-reduce rule, causal, bf16, a given
global batch or shape, RAMP Table 9's rows, another aspect ratio, infeasible plans), the
``model=hf`` encoders bert-base-uncased and bert-large-uncased under five parallel settings, and
TopoOpt's BERT. Each case compares every field: the blocks and their tasks, every collective
call, every compute task's signature, FLOPs and bytes, the plan fields in order with their
types, or the error's type and message.
"""

import json
import math

import pytest
from megatron2021_cases import SNAPSHOT, cases, outcome

EXPECTED = json.loads(SNAPSHOT.read_text(encoding="utf-8"))
CASES = cases()


def _same(ours, theirs) -> bool:
    """Equal values of the same JSON type (so 2 is not 2.0 and True is not 1)."""
    if type(ours) is not type(theirs):
        return False
    if isinstance(ours, dict):
        return ours.keys() == theirs.keys() and all(_same(ours[key], theirs[key]) for key in ours)
    if isinstance(ours, list):
        return len(ours) == len(theirs) and all(_same(a, b) for a, b in zip(ours, theirs, strict=True))
    if isinstance(ours, float) and math.isnan(ours):
        return math.isnan(theirs)
    return ours == theirs


def test_the_snapshot_covers_every_case():
    assert list(EXPECTED) == list(CASES)


@pytest.mark.parametrize("name", list(CASES))
def test_the_workload_is_the_old_generators(name):
    ours = json.loads(json.dumps(outcome(*CASES[name])))
    theirs = EXPECTED[name]
    assert ours.keys() == theirs.keys()
    if "error" in theirs:
        assert ours == theirs
        return
    for key in ("name", "num_ranks", "global_batch", "num_steps", "signatures"):
        assert _same(ours[key], theirs[key]), key
    assert [block["name"] for block in ours["blocks"]] == [block["name"] for block in theirs["blocks"]]
    for block, expected in zip(ours["blocks"], theirs["blocks"], strict=True):
        assert _same(block, expected), block["name"]
    assert [key for key, _ in ours["plan"]] == [key for key, _ in theirs["plan"]]
    for (key, value), (_, expected) in zip(ours["plan"], theirs["plan"], strict=True):
        assert _same(value, expected), key
