"""``ddlsim experiment=ramp_megatron`` writes the same bytes as at the base commit of the speed-ups of issue 34.

The gathered results, collectives and side-by-side CSVs and every figure (PNG and PDF) are hashed and
compared with the digests the base commit's command wrote (`tests/app/ramp_megatron_digests.py`).
"""

from __future__ import annotations

import json

import pytest

from tests.app.ramp_megatron_digests import STORED, digests, run_sweep


@pytest.mark.slow
def test_ramp_megatron_writes_the_base_commits_bytes(tmp_path):
    stored = json.loads(STORED.read_text(encoding="utf-8"))
    assert {"results.csv", "collectives.csv", "side_by_side.csv"} <= set(stored)
    assert any(name.endswith(".png") for name in stored) and any(name.endswith(".pdf") for name in stored)
    sweep_dir = tmp_path / "sweep"
    run_sweep(sweep_dir)
    assert digests(sweep_dir) == stored
