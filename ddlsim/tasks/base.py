"""What every task receives (the built components of one config) and returns (result rows)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from omegaconf import DictConfig

Row = dict[str, Any]


@dataclass(frozen=True)
class Components:
    """The objects one composed config builds to, all validated before any task starts."""

    config: DictConfig
    model: Any
    parallel: Any
    device: Any
    fabric: Any
    algorithm: Any
    task: Any
    compute: Any = None  # a ddlsim.compute ComputeModel for `device`


@dataclass
class TaskResult:
    """Tidy result rows (one dict per row, unit-suffixed keys) and a short human summary."""

    rows: list[Row] = field(default_factory=list)
    summary: str = ""

    def frame(self):  # -> pandas.DataFrame, imported lazily to keep start-up light
        import pandas as pd

        return pd.DataFrame(self.rows)
