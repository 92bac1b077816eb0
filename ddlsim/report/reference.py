"""Side-by-side tables: what a seed paper reports next to what ddlsim computed.

Every reproduction (`ddlsim experiment=<seed>_<figure>`) registers a `Reference` of the same
name in `ddlsim.report.references`: a function that computes ddlsim's counterparts of the
paper's statements from the result rows, optionally its own figures (in the common style of
`ddlsim.report.charts`) and extra text tables. The paper's side, its values and the places they
come from, is read from the one data file `configs/reference/papers.yaml` (`ddlsim.core.papers`), so
no paper number is written in code. A reference is chosen by name (``report.reference`` in an
experiment config, or ``ddlsim-report --reference``); the experiments' former names
(``ramp_megatron``, ...) are aliases.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ddlsim.core.errors import ConfigError
from ddlsim.core.papers import PaperReference, PaperValue, load_papers
from ddlsim.report.quantities import format_number
from ddlsim.report.table import format_table

if TYPE_CHECKING:
    import pandas as pd

OURS_ONLY = "ours only"
COLUMNS = ("quantity", "paper", "ddlsim", "source", "key")


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


REFERENCES: dict[str, Reference] = {}
ALIASES: dict[str, str] = {}


def register_reference(name: str, *, expects: Expects, aliases: Iterable[str] = (), figures: Figures | None = None,
                       tables: Tables | None = None, summary: bool = True) -> Callable[[Compare], Compare]:
    """Register `compare` as the side-by-side of experiment `name` (the data file's reference `name`)
    for rows with the columns and values `expects`; ``summary=False`` leaves out the automatic
    summary of the rows (the reference's tables say more)."""

    def decorator(compare: Compare) -> Compare:
        REFERENCES[name] = Reference(name, compare, figures, tables, tuple(aliases), summary,
                                     tuple((column, tuple(values)) for column, values in expects.items()))
        for alias in aliases:
            ALIASES[alias] = name
        return compare

    return decorator


def _load_all() -> None:
    import ddlsim.report.references  # noqa: F401  (registers every reference)


def reference_names(*, with_aliases: bool = True) -> list[str]:
    _load_all()
    return sorted({*REFERENCES, *(ALIASES if with_aliases else ())})


def reference_aliases() -> dict[str, str]:
    """Each alias (an experiment's former name) -> the reference it stands for."""
    _load_all()
    return dict(sorted(ALIASES.items()))


def get_reference(name: str) -> Reference:
    """The reference registered as `name` or under the alias `name`."""
    _load_all()
    resolved = ALIASES.get(name, name)
    if resolved not in REFERENCES:
        raise KeyError(f"unknown reference {name!r}; choose one of {', '.join(reference_names())}")
    return REFERENCES[resolved]


def check_rows(frame: pd.DataFrame, reference: str) -> None:
    """Raise `ConfigError` (key ``report.reference``) unless `frame` holds rows of the experiment
    `reference` compares: some that ran, with the columns and values it `expects`."""
    chosen = get_reference(reference)
    ran = frame[frame["status"].astype(str) == "ok"] if "status" in frame else frame
    if ran.empty:
        first = str(frame["status"].iloc[0]) if "status" in frame and len(frame) else "no rows"
        raise ConfigError("report.reference", reference, f"no row of these results ran ({first})")
    missing = [column for column, _ in chosen.expects if column not in ran]
    if missing:
        models = f" (model {', '.join(sorted(map(str, ran['model'].dropna().unique())))})" if "model" in ran else ""
        raise ConfigError("report.reference", reference, f"compares the rows of experiment={chosen.name}, which "
                                                         f"have {', '.join(missing)}; these results{models} have none")
    for column, accepted in chosen.expects:
        other = sorted({str(value) for value in ran[column].dropna()} - set(accepted)) if accepted else []
        if other:
            raise ConfigError("report.reference", reference,
                              f"compares rows with {column} = {' or '.join(accepted)} (experiment={chosen.name}); "
                              f"these results have {column} = {', '.join(other)}")


def side_by_side(frame: pd.DataFrame, reference: str) -> tuple[str, pd.DataFrame]:
    """The comparison table as text and as rows (columns `COLUMNS`), for reference `reference`."""
    import pandas as pd

    chosen = get_reference(reference)
    comparisons = chosen.compare(frame, load_papers().reference(chosen.name))
    rows = [{"quantity": item.quantity, "paper": item.paper, "ddlsim": item.ours, "source": item.source,
             "key": item.key} for item in comparisons]
    shown = {"quantity": str, "paper": str, "ddlsim": str, "source": str}
    text = format_table(rows, shown) if rows else ""
    return text, pd.DataFrame(rows, columns=list(COLUMNS))


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
