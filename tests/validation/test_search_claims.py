"""The search's claims on measured vTrain configurations (ddlsim/validation/search_claims.py)."""

import pytest
from test_vtrain_validation import DATA, needs_data

from ddlsim.validation import search_claims
from ddlsim.validation import vtrain as validate


@needs_data
def test_claims_on_the_smallest_group_add_up_and_never_lose_to_the_measured_plan():
    rows = validate.load_rows(DATA)
    group = rows[(rows.scale == "multi-node") & (rows.gpus == 64)]
    table = search_claims.claims(group)
    assert len(table) == 1
    claim = table.iloc[0]
    assert claim.measured_plans == len(group)
    # The search space holds the measured plans, so its first plan is never slower than the best of them.
    assert claim.claimed_speedup >= 1.0 - 1e-9
    # compute + exposed communication + bubble is the iteration time: the terms add up to the gain.
    gain = claim.simulated_measured_plan_ms - claim.search_first_ms
    assert claim.gain_compute_ms + claim.gain_exposed_comm_ms + claim.gain_bubble_ms == pytest.approx(gain, abs=1e-6)
    assert "| GPT 3.6 B | 64 |" in search_claims.markdown(table)
