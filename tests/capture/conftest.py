"""Small captured programs shared by the capture tests (each captured once per module)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:  # the examples/ package lives at the repository root
    sys.path.insert(0, str(REPO))


@pytest.fixture(autouse=True)
def _no_process_group_left():
    """Every capture must tear its fake process group down, on success and on error."""
    import torch.distributed as dist

    yield
    assert not dist.is_initialized(), "a capture left a process group behind"
