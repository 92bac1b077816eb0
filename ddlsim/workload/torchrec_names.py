"""torchrec's names ddlsim uses, imported so that fbgemm_gpu leaves the root logger as it was.

While it loads, fbgemm_gpu logs through the module-level ``logging.info``, which calls
``logging.basicConfig()`` when the root logger has no handler: a second stderr handler, so that
every later log line (``ddlsim --info``, Hydra's job log) printed twice. Every ddlsim module takes
torchrec's names from here; the root logger's handlers and level are put back after the import.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def root_logger_kept() -> Iterator[None]:
    """Undo whatever the body adds to the root logger's handlers or does to its level."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    try:
        yield
    finally:
        for handler in root.handlers[:]:
            if handler not in handlers:
                root.removeHandler(handler)
        root.setLevel(level)


with root_logger_kept():
    from torchrec import EmbeddingBagCollection, EmbeddingBagConfig, KeyedJaggedTensor
    from torchrec.distributed.types import ShardingType
    from torchrec.modules.embedding_configs import DataType

__all__ = ["DataType", "EmbeddingBagCollection", "EmbeddingBagConfig", "KeyedJaggedTensor", "ShardingType",
           "root_logger_kept"]
