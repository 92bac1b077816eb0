"""Fixtures of the report tests."""

from __future__ import annotations

import matplotlib.pyplot as plt
import pytest

from ddlsim.report import style


@pytest.fixture
def drawn(monkeypatch) -> list[plt.Figure]:
    """Figures as they are saved, kept open for inspection; written at a small resolution."""
    figures: list[plt.Figure] = []
    close = plt.close
    monkeypatch.setattr(style, "DPI", 30)
    monkeypatch.setattr(plt, "close", figures.append)
    yield figures
    close("all")
