"""Compatibility of `torch.distributed.pipelining` with a fake process group.

Pipelined programs need nothing special from the user: each captured rank (one per stage, see
`api.default_ranks`) runs its stage's schedule, and its sends and receives are matched across
the captured ranks when the graph is built (`graph.py`). One thing cannot run as written: on its
first step a schedule lets the stages vote, over point-to-point messages, whether their shapes
are static, and reads the result with ``.item()``. A fake process group carries no data, so
while a capture runs each stage takes its own vote (`stage_votes_locally`), which is what the
protocol returns whenever every stage agrees.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any


@contextlib.contextmanager
def stage_votes_locally() -> Iterator[None]:
    try:
        from torch.distributed.pipelining import schedules
        from torch.distributed.pipelining._utils import InferenceMode
        from torch.distributed.pipelining.stage import PipelineStage
    except ImportError:  # an older torch without the vote: nothing to patch
        yield
        return
    owner = schedules._PipelineSchedule
    original = owner.__dict__.get("_warmup_p2p")
    if original is None:
        yield
        return

    def warmup(self: Any, stages: list[Any], has_backward: bool, p2p_done: bool) -> None:
        if not all(isinstance(stage, PipelineStage) for stage in stages):
            return original(self, stages, has_backward, p2p_done)
        for stage in stages:
            dynamic = InferenceMode.needs_dynamic(stage._user_meta, has_backward)
            stage._inference_mode = InferenceMode.DYNAMIC if dynamic else InferenceMode.STATIC
        return None

    owner._warmup_p2p = warmup
    try:
        yield
    finally:
        owner._warmup_p2p = original
