"""`torch.distributed.pipelining` schedules: one captured rank per stage, sends matched to receives,
the schedule's own order of chunks (GPipe, 1F1B, interleaved 1F1B with two stages per rank)."""

from __future__ import annotations

import pytest

import ddlsim
from tests.capture.programs import MICRO_BATCHES, pipeline


@pytest.mark.parametrize("kind", ["gpipe", "1f1b", "interleaved"])
def test_pipeline_schedules_capture_and_match_sends(kind):
    program = ddlsim.capture(pipeline(kind), (2,), ("pp",))
    assert program.ranks == (0, 1) and program.stages == (0, 1)
    p2p = program.events[program.events.op == "send_recv"]
    boundaries = 3 if kind == "interleaved" else 1  # stage boundaries a micro-batch crosses each way
    assert len(p2p[~p2p.receives.astype(bool)]) == len(p2p[p2p.receives.astype(bool)]) == 2 * boundaries * MICRO_BATCHES
    result = ddlsim.simulate(program, fabric="superpod")
    assert {op.stage for op in result.graph.ops} == {0, 1}
    assert result.iteration_time_s > result.compute_time_s > 0
