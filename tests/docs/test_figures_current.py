"""The figures in docs/figures/ are current: the data each one plots, recomputed now, equals the data
recorded beside it when it was drawn (`scripts/regenerate_figures.py`)."""

from __future__ import annotations

import importlib.util

import pandas as pd
import pytest

from tests.docs.doc_blocks import ROOT

_SPEC = importlib.util.spec_from_file_location("regenerate_figures", ROOT / "scripts" / "regenerate_figures.py")
regenerate_figures = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(regenerate_figures)

SLOW = {"ramp_megatron_training_time", "ramp_group_size", "scale_costs_time_split", "sipac_fig12", "topoopt_fig16"}


def test_every_figure_in_docs_has_a_maker_and_its_data() -> None:
    pictures = {path.stem for path in (ROOT / "docs" / "figures").glob("*.png")}
    assert pictures == set(regenerate_figures.MAKERS)
    assert all((ROOT / "docs" / "figures" / f"{name}.csv").is_file() for name in pictures)


@pytest.mark.parametrize("name", [pytest.param(name, marks=[pytest.mark.slow] if name in SLOW else [])
                                  for name in sorted(regenerate_figures.MAKERS)])
def test_the_figure_is_current(name: str) -> None:
    assert regenerate_figures.regenerate(name, check=True) == []


def test_a_moved_number_is_reported() -> None:
    recorded = pd.DataFrame({"series": ["ramp", "superpod"], "x": [2.2, 2.2], "time_s": [1.0, 2.0]})
    moved = recorded.assign(time_s=[1.0, 2.1])
    assert regenerate_figures.differences(recorded, recorded) == []
    assert regenerate_figures.differences(recorded, moved) == ["time_s[1]: recorded 2.0, now 2.1"]
