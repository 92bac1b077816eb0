"""The `report` config section (kept free of heavy imports: the config schema loads it)."""

from __future__ import annotations

from dataclasses import dataclass, field

from ddlsim.core.errors import ConfigError

FIGURE_KINDS = ("training", "collective", "hybrid", "time_split")


@dataclass
class ReportSettings:
    """The `report` config section: what a sweep's report draws.

    `figures` lists figure kinds (``auto`` picks them by the columns; ``time_split``, never picked
    by ``auto``, stacks where an iteration's wall time goes, `ddlsim.report.time_split`), `reference` names the
    paper experiment for the side-by-side table, `baseline` the fabric speed-ups are relative
    to (default: ramp when present), `x` the x column of training figures (default: the first
    of target loss, number of GPUs, ... that varies), `plots` turns figures off.
    """

    figures: list[str] = field(default_factory=lambda: ["auto"])
    reference: str = ""
    baseline: str = ""
    x: str = "auto"
    plots: bool = True

    def __post_init__(self) -> None:
        unknown = [kind for kind in self.figures if kind not in ("auto", *FIGURE_KINDS)]
        if unknown or not self.figures:
            raise ConfigError("figures", list(self.figures), f"must list auto or figure kinds among "
                                                             f"{', '.join(FIGURE_KINDS)}")
        if self.reference:
            from ddlsim.report.references.index import reference_names

            if self.reference not in reference_names():
                raise ConfigError("reference", self.reference, f"unknown paper experiment; choose one of "
                                                               f"{', '.join(reference_names(with_aliases=False))}")
