"""What every task receives (the built components of one config) and returns (result rows)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from omegaconf import DictConfig

Row = dict[str, Any]
# The config groups a task may read besides its own (`ddlsim.app.config_store.GROUPS` less ``task``).
INPUT_GROUPS = ("model", "parallel", "device", "compute", "fabric", "collective", "training")


def task_reads(task: Any) -> tuple[str, ...]:
    """The groups `task` reads: its class's ``reads`` (a `ClassVar`), else every input group.

    The runner refuses an option chosen for a group the task does not read (`check_unread_groups`),
    and an assumption set that changes none of the groups it reads: either would be ignored silently.
    """
    return tuple(getattr(type(task), "reads", INPUT_GROUPS))


def config_label(config: Any, group: str) -> str:
    """What rows call the option chosen for `group`: its ``label`` (a YAML variant sets it to
    its own name, e.g. ``superpod_1to1``), else its registered ``name``."""
    node = config.get(group) if hasattr(config, "get") else None
    if node is None:
        return ""
    label = node.get("label") if hasattr(node, "get") else None
    return str(label or node.get("name") or "")


@dataclass(frozen=True)
class Components:
    """The objects one composed config builds to, all validated before any task starts."""

    config: DictConfig
    model: Any
    parallel: Any
    device: Any
    fabric: Any
    algorithm: Any
    task: Any
    compute: Any = None  # a ddlsim.compute ComputeModel for `device`
    output_dir: Path | None = None  # the run's directory, when there is one (command line)
    # `config` as plain resolved containers (``OmegaConf.to_container(config, resolve=True)``), where the
    # caller keeps one (`ddlsim.Session`): tasks read their labels and settings from it without OmegaConf.
    plain: dict[str, Any] | None = None

    @property
    def view(self) -> Any:
        """The config to read labels and settings from: `plain` when there is one, else `config`."""
        return self.plain if self.plain is not None else self.config


@dataclass
class TaskResult:
    """Tidy result rows (one dict per row, unit-suffixed keys) and a short human summary.

    `collectives`: the long form of the rows' per-collective breakdown, one row per run x collective,
    each keyed by ``run_id`` (the index of its row in `rows`): ``collectives.csv`` (docs/training.md).
    """

    rows: list[Row] = field(default_factory=list)
    summary: str = ""
    collectives: list[Row] = field(default_factory=list)

    def frame(self):  # -> pandas.DataFrame, imported lazily to keep start-up light
        import pandas as pd

        return pd.DataFrame(self.rows)

    def collectives_frame(self):  # -> pandas.DataFrame
        from ddlsim.report.results import rows_to_frame

        return rows_to_frame(self.collectives)
