"""The `report` config section (kept free of heavy imports: the config schema loads it)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class ReportSettings:
    """The `report` config section: what a sweep's report draws.

    `figures` lists figure kinds (``auto`` picks them by the columns), `reference` names the
    paper experiment for the side-by-side table, `baseline` the fabric speed-ups are relative
    to (default: ramp when present), `x` the x column of training figures (default: the first
    of target loss, number of GPUs, ... that varies), `plots` turns figures off.
    """

    figures: list[str] = field(default_factory=lambda: ["auto"])
    reference: str = ""
    baseline: str = ""
    x: str = "auto"
    plots: bool = True
