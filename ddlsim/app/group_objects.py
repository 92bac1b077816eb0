"""The group objects of a sweep's jobs, reused from job to job when a group's config is unchanged.

A sweep's jobs mostly share their fabric, device, collective algorithm and task, and differ in a
few values (``model.target_loss``). `GroupObjects` keeps each group's built object under the
resolved content of its config, so a job whose fabric config equals an earlier job's gets the
same fabric object, and with it the collective estimator that priced the earlier job
(`ddlsim.training.run.network_timer`), whose schedules and step prices carry over. Prices never
depend on what a cache holds, so the rows are those of building every job afresh. Objects are
reused only under the ``faithful`` assumption set: another set may rewrite a group from the
choices of other groups.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from omegaconf import DictConfig, OmegaConf

from ddlsim.core.caches import Memo

# Groups whose object is also built from another group's config.
ALSO_READS: dict[str, tuple[str, ...]] = {"compute": ("device",)}

Reuse = Callable[[str, Callable[[], Any]], Any]


def _content(node: Any) -> str:
    plain = OmegaConf.to_container(node, resolve=True) if OmegaConf.is_config(node) else node
    return json.dumps(plain, sort_keys=True, default=repr)


class GroupObjects:
    """Built group objects by the resolved content of their config (the newest `maxsize` kept)."""

    def __init__(self, maxsize: int = 16) -> None:
        self._objects = Memo("group_objects", maxsize)

    def builder(self, config: DictConfig) -> Reuse:
        """The ``reuse(group, make)`` hook of `ddlsim.app.runner.assemble_components` for `config`."""

        def reuse(group: str, make: Callable[[], Any]) -> Any:
            key = (group, *(_content(config.get(name)) for name in (group, *ALSO_READS.get(group, ()))))
            return self._objects.get_or_make(key, make)

        return reuse


JOB_OBJECTS = GroupObjects()  # the objects of the sweep jobs this process runs (`ddlsim.app.cli`)
