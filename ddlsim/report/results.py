"""Result rows to files: ``results.csv`` and ``results.parquet``, written atomically (mode 0644)."""

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


def rows_to_frame(rows: Sequence[dict[str, Any]]) -> pd.DataFrame:
    """Columns in first-seen order, so the same rows always give the same table."""
    import pandas as pd

    columns: dict[str, None] = {}
    for row in rows:
        columns.update(dict.fromkeys(row))
    return pd.DataFrame(list(rows), columns=list(columns))


def result_names(*, csv: bool = True, parquet: bool = True) -> list[str]:
    """The result files a run with these output settings writes."""
    return [name for name, wanted in ((CSV_NAME, csv), (PARQUET_NAME, parquet)) if wanted]


def write_results(frame: pd.DataFrame, directory: str | os.PathLike[str], *, csv: bool = True,
                  parquet: bool = True) -> list[Path]:
    """Write `frame` as CSV and/or Parquet into `directory`; return the paths written."""
    directory = Path(directory)
    written = []
    if csv:
        path = directory / CSV_NAME
        atomic_write(path, lambda target: frame.to_csv(target, index=False))
        written.append(path)
    if parquet:
        path = directory / PARQUET_NAME
        atomic_write(path, lambda target: frame.to_parquet(target, index=False))
        written.append(path)
    return written
