"""Decoder rows and workloads equal, bit for bit, what the base of issue 34's speed work computed
(`decoder_reference.py` wrote `decoder_reference.json` with that commit's code): through
``ddlsim.run`` (the process-wide Session's fast path), a `ddlsim.Session` and a full composition."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from decoder_reference import workload_digest
from row_checks import same_rows

import ddlsim
from ddlsim.app import runner

REFERENCE = json.loads(Path(__file__).with_name("decoder_reference.json").read_text())


@pytest.mark.parametrize("case", REFERENCE["runs"], ids=lambda case: " ".join(case["overrides"][-3:]))
def test_ddlsim_run_gives_the_reference_rows(case):
    same_rows(ddlsim.run(case["overrides"]).rows, case["rows"])


def test_a_session_and_a_full_composition_give_the_reference_rows():
    session = ddlsim.Session(["experiment=single"])
    for case in REFERENCE["runs"][::5]:
        overrides = case["overrides"][1:]
        same_rows(session.run(overrides).rows, case["rows"])
        same_rows(runner.run(ddlsim.compose(case["overrides"])).rows, case["rows"])


@pytest.mark.parametrize("case", REFERENCE["workloads"], ids=lambda case: str(case["case"]))
def test_the_workload_is_the_reference_one(case):
    assert workload_digest(*case["case"]) == case["sha256"]
