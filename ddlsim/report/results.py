"""Result rows to files: ``results.csv`` and ``results.parquet``, written atomically."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

CSV_NAME = "results.csv"
PARQUET_NAME = "results.parquet"


def rows_to_frame(rows: Sequence[dict[str, Any]]) -> pd.DataFrame:
    """Columns in first-seen order, so the same rows always give the same table."""
    columns: dict[str, None] = {}
    for row in rows:
        columns.update(dict.fromkeys(row))
    return pd.DataFrame(list(rows), columns=list(columns))


def _atomic_write(path: Path, write: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(handle)
    try:
        write(temporary)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def write_results(frame: pd.DataFrame, directory: str | os.PathLike[str], *, csv: bool = True,
                  parquet: bool = True) -> list[Path]:
    """Write `frame` as CSV and/or Parquet into `directory`; return the paths written."""
    directory = Path(directory)
    written = []
    if csv:
        path = directory / CSV_NAME
        _atomic_write(path, lambda target: frame.to_csv(target, index=False))
        written.append(path)
    if parquet:
        path = directory / PARQUET_NAME
        _atomic_write(path, lambda target: frame.to_parquet(target, index=False))
        written.append(path)
    return written
