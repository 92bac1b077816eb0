"""docs/reproduction.md's tables: headlines from rows, and the three columns plus what-ifs."""

from __future__ import annotations

import pandas as pd

from ddlsim.report.references.assumption_tables import Seed, ramp_training, seed_tables


def _rows(ramp_s: float, other_s: float) -> pd.DataFrame:
    return pd.DataFrame([
        {"overrides": f"fabric={fabric} model.target_loss={loss}", "fabric": fabric, "status": "ok",
         "iteration_time_s": time * (1 + i), "comm_fraction": share}
        for i, loss in enumerate((2.0, 1.5))
        for fabric, time, share in (("ramp", ramp_s, 0.1), ("superpod", other_s, 0.9))])


def test_ramp_headline_pairs_rows_of_one_point_across_fabrics() -> None:
    headline = ramp_training({"Fat-Tree": "superpod"})(_rows(1.0, 4.0))
    assert headline["RAMP speed-up over Fat-Tree"] == "4x"
    assert headline["RAMP communication share"] == "10 %"
    assert headline["baselines' communication share"] == "90 %"


def test_seed_tables_show_paper_assumptions_faithful_and_one_switch_at_a_time() -> None:
    def run(overrides):
        if "assumptions=ramp_paper" not in overrides:
            return _rows(1.0, 2.0)
        return _rows(1.0, 3.0 if "assumptions.fabric.ramp.switching=transcoder" in overrides else 8.0)

    seed = Seed("demo", ["experiment=ramp_fig16"], "ramp_paper", ramp_training({"Fat-Tree": "superpod"}),
                {"RAMP speed-up over Fat-Tree": "16.7x"},
                {"switching": ["assumptions.fabric.ramp.switching=transcoder"]})
    text = "\n".join(seed_tables(seed, run))
    assert "| RAMP speed-up over Fat-Tree | 16.7x | 8x | 2x |" in text
    assert "| switching (`assumptions.fabric.ramp.switching=transcoder`) | 3x |" in text
    assert "| none (faithful) | 2x |" in text
