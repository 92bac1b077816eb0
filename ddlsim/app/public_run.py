"""`ddlsim.run`: a list of overrides runs through one process-wide `ddlsim.Session`, the same path
as ``Session(...).run``: each set of group choices is composed once, plain values are set on the
composed config's typed nodes, and unchanged groups' objects and their caches are reused, so a
loop over ``ddlsim.run([...])`` costs what a loop over a Session costs. Its rows are those of
composing each list afresh (`tests/test_session_fast_path.py`). Like a Session's, a group's
object is built once per distinct set of its overrides, so a file a config names (``model.config``
of ``model=hf``, a capture, a trace) is read when that object is first built; `ddlsim.clear_caches()`
drops the shared Session. A composed config, a mapping or None goes to `ddlsim.app.runner.run`.

Kept apart from `ddlsim.app.session` so that ``ddlsim.run(mapping)`` does not load Hydra.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping, Sequence
from typing import Any

from omegaconf import DictConfig

from ddlsim.app import runner
from ddlsim.app.group_objects import GroupObjects
from ddlsim.core.caches import PROCESS_CACHES
from ddlsim.tasks.base import TaskResult

SHARED_COMPOSITIONS = 16  # sets of group choices the process-wide Session keeps composed
_lock = threading.Lock()  # a Session is not thread-safe; ddlsim.run may be called from threads
_shared = PROCESS_CACHES.memo("ddlsim.run session", maxsize=1)  # `ddlsim.clear_caches()` drops it


def _make_session() -> Any:
    from ddlsim.app.session import Session  # Hydra loads only where overrides are composed

    return Session(max_compositions=SHARED_COMPOSITIONS)


def run(config: DictConfig | Mapping[str, Any] | Sequence[str] | str | None = None, *,
        output_dir: str | os.PathLike[str] | None = None, objects: GroupObjects | None = None) -> TaskResult:
    """Run one configuration and return its rows and summary (`ddlsim.app.runner.run`'s contract).

    `config` may be a composed config, a plain mapping of groups, a list of command-line
    overrides (``["fabric=ideal", "task.sizes=[1GB]"]``; one string is one override) or None for
    the default. Raises `ConfigError` for invalid input (a bad override with the line the command
    prints for it, chained to Hydra's exception) and `InfeasibleError` for a point that cannot
    run. Writes no files, except a task's own into `output_dir` (``task=profile``).
    """
    if objects is None and isinstance(config, (list, tuple, str)):
        with _lock:
            return _shared.get_or_make("session", _make_session).run(config, output_dir=output_dir)
    return runner.run(config, output_dir=output_dir, objects=objects)
