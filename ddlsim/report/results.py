"""Result rows to files: ``results.csv`` and ``results.parquet``, written atomically (mode 0644),
and beside them the long form of the per-collective breakdown, ``collectives.csv`` and
``collectives.parquet`` (one row per run x collective, keyed by ``run_id``: docs/training.md)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ddlsim.core.files import atomic_write

if TYPE_CHECKING:  # pandas loads where rows become a table, not when the command line starts
    import pandas as pd

CSV_NAME = "results.csv"
PARQUET_NAME = "results.parquet"
COLLECTIVES_CSV_NAME = "collectives.csv"
COLLECTIVES_PARQUET_NAME = "collectives.parquet"


def rows_to_frame(rows: Sequence[dict[str, Any]]) -> pd.DataFrame:
    """Columns in first-seen order, so the same rows always give the same table."""
    import pandas as pd

    columns: dict[str, None] = {}
    for row in rows:
        columns.update(dict.fromkeys(row))
    return pd.DataFrame(list(rows), columns=list(columns))


def result_names(*, csv: bool = True, parquet: bool = True, collectives: bool = False) -> list[str]:
    """The result files a run with these output settings writes (`collectives`: and the long form)."""
    names = [(CSV_NAME, csv), (PARQUET_NAME, parquet)]
    if collectives:
        names += [(COLLECTIVES_CSV_NAME, csv), (COLLECTIVES_PARQUET_NAME, parquet)]
    return [name for name, wanted in names if wanted]


def write_results(frame: pd.DataFrame, directory: str | os.PathLike[str], *, csv: bool = True,
                  parquet: bool = True, collectives: pd.DataFrame | None = None) -> list[Path]:
    """Write `frame` as CSV and/or Parquet into `directory`, and `collectives` (the long form) beside
    it when it has rows; return the paths written."""
    written = _write_table(frame, Path(directory), CSV_NAME if csv else None, PARQUET_NAME if parquet else None)
    if collectives is not None and not collectives.empty:
        written += write_collectives(collectives, directory, csv=csv, parquet=parquet)
    return written


def write_collectives(frame: pd.DataFrame, directory: str | os.PathLike[str], *, csv: bool = True,
                      parquet: bool = True) -> list[Path]:
    """Write the long-form collectives `frame` into `directory`; return the paths written."""
    return _write_table(frame, Path(directory), COLLECTIVES_CSV_NAME if csv else None,
                        COLLECTIVES_PARQUET_NAME if parquet else None)


def _write_table(frame: pd.DataFrame, directory: Path, csv_name: str | None, parquet_name: str | None) -> list[Path]:
    written = []
    if csv_name:
        path = directory / csv_name
        atomic_write(path, lambda target: frame.to_csv(target, index=False))
        written.append(path)
    if parquet_name:
        path = directory / parquet_name
        atomic_write(path, lambda target: frame.to_parquet(target, index=False))
        written.append(path)
    return written


def read_collectives(path: str | os.PathLike[str]) -> pd.DataFrame:
    """A ``collectives.csv`` or ``.parquet`` as written (pandas reads floats back bit for bit)."""
    import pandas as pd

    path = Path(path)
    return pd.read_parquet(path) if path.suffix == ".parquet" else pd.read_csv(path)
