"""Issue 32's acceptance on the published runs (`ddlsim.validation.published`): Megatron-LM SC'21
Table 1 and Llama 3 Table 4, each scored with the straggler deviation fitted without it, and the
shipped deviation is the fit on every source. The two acceptance tests are expected failures: held
out, neither table meets its target (docs/validation.md, "At scale"). The validation takes about
40 s of wall time on 2 cores, so these run with ``-m slow`` (`python scripts/validate_published.py`
prints it all)."""

from __future__ import annotations

from functools import cache

import pandas as pd
import pytest

from ddlsim.training.at_scale.stragglers import SPEED_SIGMA
from ddlsim.validation import published

pytestmark = pytest.mark.slow


@cache
def scores() -> published.Scores:
    return published.score(published.predictions(quick=True))


def _held_out(source: str) -> pd.Series:
    rows = scores().rows
    return rows[rows.source == source].error_held_out


@pytest.mark.xfail(strict=True, reason="missed: Table 1 held out MAPE 13.76 %, max 18.2 % (targets 6 %, 10 %); "
                   "docs/validation.md, 'At scale'")
def test_megatron_table1_held_out_is_within_the_targets() -> None:
    errors = _held_out("megatron_t1")
    assert len(errors) == 10
    assert errors.abs().mean() <= 0.06, errors.tolist()
    assert errors.abs().max() <= 0.10, errors.tolist()


@pytest.mark.xfail(strict=True, reason="missed: Llama 3 held out rows +2.5 %, +16.6 %, +17.1 % (target 10 %); "
                   "docs/validation.md, 'At scale'")
def test_llama3_table4_held_out_rows_are_each_within_10_percent() -> None:
    errors = _held_out("llama3_t4")
    assert len(errors) == 3
    assert errors.abs().max() <= 0.10, errors.tolist()


def test_llama3_16384_gpu_rows_are_within_2_percent_with_the_costs_off() -> None:
    rows = scores().rows
    rows = rows[(rows.source == "llama3_t4") & (rows.gpus == 16384)]
    errors = (rows.off_s - rows.measured_s) / rows.measured_s
    assert len(errors) == 2
    assert errors.abs().max() <= 0.02, errors.tolist()


def test_the_costs_at_the_shipped_deviation_lower_the_mean_error_over_sources() -> None:
    in_sample = scores().in_sample
    assert len(in_sample) == 4
    assert in_sample.mape_pct.mean() < in_sample.off_mape_pct.mean(), in_sample.to_string()


def test_the_shipped_deviation_is_the_fit_on_every_source() -> None:
    assert scores().sigma_all == pytest.approx(SPEED_SIGMA, abs=5e-4)


def test_the_settings_of_table1_are_the_authors_scripts() -> None:
    rows = scores().rows
    settings = dict(zip(rows[rows.source == "megatron_t1"].case, rows[rows.source == "megatron_t1"].settings,
                        strict=True))
    assert settings["76.1B tp8 pp4"] == "micro-batch 2, 3 virtual stages, DDP local"
    assert settings["1.7B tp1 pp1"] == "micro-batch 16, 1 virtual stages, DDP torch"
