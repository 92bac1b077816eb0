"""The index of every seed reference: one explicit list, and the comparison of rows by name.

Each module of `ddlsim.report.references` defines its references (`define_reference`) and
imports nothing of the index; adding a reproduction means adding its `Reference` to `ALL` here.
A reference is chosen by name (``report.reference`` in an experiment config, or
``ddlsim-report --reference``); the experiments' former names (``ramp_megatron``, ...) are aliases.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ddlsim.core.errors import ConfigError
from ddlsim.core.papers import load_papers
from ddlsim.report.reference import Reference
from ddlsim.report.references import (
    opsquare,
    ramp_collectives,
    ramp_fig22_23,
    ramp_tables,
    ramp_training,
    sipac,
    sipac_fig9_12,
    topoopt,
    topoopt_degree,
    topoopt_shared,
    wrht,
)
from ddlsim.report.table import format_table

if TYPE_CHECKING:
    import pandas as pd

COLUMNS = ("quantity", "paper", "ddlsim", "source", "key")

ALL: tuple[Reference, ...] = (
    opsquare.opsquare_fig2_3,
    ramp_collectives.ramp_fig15, ramp_collectives.ramp_fig18, ramp_collectives.ramp_fig19,
    ramp_collectives.ramp_fig21,
    ramp_fig22_23.ramp_fig22, ramp_fig22_23.ramp_fig23,
    ramp_tables.ramp_tables_9_10, ramp_tables.ramp_tables_3_4,
    ramp_training.ramp_fig16, ramp_training.ramp_fig17, ramp_training.ramp_fig18_20,
    sipac.sipac_fig13, sipac.sipac_fig7, sipac.sipac_fig10_11,
    sipac_fig9_12.sipac_fig9, sipac_fig9_12.sipac_fig12,
    topoopt.topoopt_fig10, topoopt.topoopt_fig11, topoopt.topoopt_fig12_14, topoopt.topoopt_fig17,
    topoopt_degree.topoopt_fig15, topoopt_degree.topoopt_fig27, topoopt_degree.topoopt_fig28,
    topoopt_shared.topoopt_fig16,
    wrht.wrht_table1, wrht.wrht_fig4, wrht.wrht_fig5, wrht.wrht_fig6, wrht.wrht_fig7,
)
REFERENCES: dict[str, Reference] = {reference.name: reference for reference in ALL}
ALIASES: dict[str, str] = {alias: reference.name for reference in ALL for alias in reference.aliases}


def reference_names(*, with_aliases: bool = True) -> list[str]:
    return sorted({*REFERENCES, *(ALIASES if with_aliases else ())})


def reference_aliases() -> dict[str, str]:
    """Each alias (an experiment's former name) -> the reference it stands for."""
    return dict(sorted(ALIASES.items()))


def get_reference(name: str) -> Reference:
    """The reference named `name` or under the alias `name`."""
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
