"""Side-by-side tables: what a seed paper reports next to what ddlsim computed.

Every reproduction (`ddlsim experiment=<seed>_<figure>`) has a `Reference` of the same name in
`ddlsim.report.references`, made with `define_reference`: a function that computes ddlsim's
counterparts of the paper's statements from the result rows, optionally its own figures (in the
common style of `ddlsim.report.charts`) and extra text tables. This module says what a reference
is made of; `ddlsim.report.references.index` lists them all and compares rows by name. The
paper's side, its values and the places they come from, is read from the one data file
`configs/reference/papers.yaml` (`ddlsim.core.papers`), so no paper number is written in code.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ddlsim.core.papers import PaperReference, PaperValue
from ddlsim.report.quantities import format_number

if TYPE_CHECKING:
    import pandas as pd

OURS_ONLY = "ours only"


@dataclass(frozen=True)
class Comparison:
    """One line of a side-by-side table; `key` names the paper value in the data file ('' if none)."""

    quantity: str
    paper: str
    ours: str
    source: str
    key: str = ""


def stated(value: PaperValue, ours: str, quantity: str | None = None) -> Comparison:
    """The paper's statement `value` beside ddlsim's `ours`."""
    return Comparison(value.quantity if quantity is None else quantity, value.paper, ours, value.source, value.key)


def ours_only(quantity: str, ours: str, source: str = OURS_ONLY) -> Comparison:
    """A number of ours the paper does not state."""
    return Comparison(quantity, "-", ours, source)


Compare = Callable[["pd.DataFrame", PaperReference], list[Comparison]]
Figures = Callable[["pd.DataFrame", Path], list[Path]]
Tables = Callable[["pd.DataFrame"], str]


Expects = dict[str, tuple[str, ...]]
# The columns a reference reads, by the task whose rows it compares (a value list: the accepted values).
# Megatron encoder rows carry `shape_source`, DLRM rows `num_tables`.
TRAINING_ROWS: Expects = {"iteration_time_s": (), "compute_time_s": (), "comm_fraction": (), "model": ()}
COLLECTIVE_ROWS: Expects = {"op": (), "size_bytes": (), "num_ranks": (), "time_s": ()}
STEPS_ROWS: Expects = {"op": (), "num_ranks": (), "num_steps": ()}
TOPOOPT_ROWS: Expects = {"iteration_time_s": (), "link_bandwidth_bps": (), "bandwidth_tax": ()}


@dataclass(frozen=True)
class Reference:
    """A reproduction's side of the report: the comparison, and optionally its figures and tables.

    `expects` says which rows it compares: column -> accepted values (empty: any value), checked
    by `check_rows` before the comparison, so that a sweep of another experiment is refused.
    """

    name: str
    compare: Compare
    figures: Figures | None = None
    tables: Tables | None = None
    aliases: tuple[str, ...] = ()
    summary: bool = True  # False: its tables replace the automatic summary of the rows
    expects: tuple[tuple[str, tuple[str, ...]], ...] = ()


def define_reference(name: str, *, expects: Expects, aliases: Iterable[str] = (), figures: Figures | None = None,
                     tables: Tables | None = None, summary: bool = True) -> Callable[[Compare], Reference]:
    """Make `compare` the side-by-side of experiment `name` (the data file's reference `name`) for
    rows with the columns and values `expects`; ``summary=False`` leaves out the automatic summary
    of the rows (the reference's tables say more). The decorated name is the `Reference`; the
    index (`ddlsim.report.references.index`) lists it."""

    def decorator(compare: Compare) -> Reference:
        return Reference(name, compare, figures, tables, tuple(aliases), summary,
                         tuple((column, tuple(values)) for column, values in expects.items()))

    return decorator


# -- helpers shared by the references ----------------------------------------------------------

def span(values: object, scale: float = 1.0, suffix: str = "x", digits: int = 3) -> str:
    """``low-high<suffix>`` of the finite values (one value when they agree), or ``n/a``."""
    import pandas as pd

    series = pd.Series(values, dtype=float).dropna()
    if series.empty:
        return "n/a"
    low, high = series.min() * scale, series.max() * scale
    if math.isclose(low, high):
        return f"{format_number(low, digits)}{suffix}"
    return f"{format_number(low, digits)}-{format_number(high, digits)}{suffix}"


def has_role(label: str, systems: Iterable[str]) -> bool:
    """True when a row label is one of `systems` or a variant of one (``superpod_1to1``)."""
    return any(label.startswith(system) for system in systems)


def role_mask(frame: pd.DataFrame, systems: Iterable[str], column: str = "series") -> pd.Series:
    """Rows whose `column` plays one of `systems`, as a boolean mask (also when `frame` is empty)."""
    systems = tuple(systems)
    return frame[column].map(lambda label: has_role(str(label), systems)).astype(bool)


def holds(flag: bool | None) -> str:
    return {True: "holds", False: "differs", None: "n/a"}[flag]
