"""The at-scale costs of one iteration, added to its summary (`ddlsim.training.at_scale`)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from ddlsim.compute.kernel_tables import KERNEL_SHEETS
from ddlsim.training.at_scale.framework import framework_s
from ddlsim.training.at_scale.interference import interference_s
from ddlsim.training.at_scale.settings import AtScaleSettings
from ddlsim.training.at_scale.stragglers import straggler_s
from ddlsim.training.timeline import IterationSummary

COLUMNS = ("interference_s", "straggler_s", "framework_s")


@dataclass(frozen=True)
class AtScaleCosts:
    """Seconds one iteration loses to each at-scale cost (0 where its switch is off)."""

    interference_s: float = 0.0
    straggler_s: float = 0.0
    framework_s: float = 0.0

    @property
    def total_s(self) -> float:
        return self.interference_s + self.straggler_s + self.framework_s

    def row(self) -> dict[str, float]:
        return {column: getattr(self, column) for column in COLUMNS}

    def largest(self) -> tuple[str, float]:
        """(column, seconds) of the largest cost."""
        return max(self.row().items(), key=lambda item: item[1])


def sm_count_of(device: Any) -> int:
    sheet = KERNEL_SHEETS.get(getattr(device, "name", ""))
    return sheet.sm_count if sheet is not None else 0


def at_scale_costs(summary: IterationSummary, plan: dict[str, Any], num_gpus: int, device: Any,
                   settings: AtScaleSettings) -> AtScaleCosts:
    """The costs `settings` switches on, for an iteration summed up as `summary`."""
    if not settings.any:
        return AtScaleCosts()
    interference = interference_s(summary.hidden_comm_time_s, summary.collectives, sm_count_of(device)) \
        if settings.interference else 0.0
    paced = summary.compute_time_s + summary.bubble_time_s + interference
    stragglers = straggler_s(paced, num_gpus, settings.speed_sigma) if settings.stragglers else 0.0
    framework = framework_s(plan, device) if settings.framework else 0.0
    return AtScaleCosts(interference_s=interference, straggler_s=stragglers, framework_s=framework)


def with_costs(summary: IterationSummary, costs: AtScaleCosts) -> IterationSummary:
    """`summary` with the at-scale costs in its iteration time (unchanged when they are 0)."""
    if costs.total_s == 0:
        return summary
    return dataclasses.replace(summary, iteration_time_s=summary.iteration_time_s + costs.total_s,
                               at_scale_time_s=costs.total_s)
