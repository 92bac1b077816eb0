"""`task=steps`: how many algorithmic steps a collective takes, per algorithm, op and scale.

One row per (algorithm, op, number of ranks) on the configured fabric: op, fabric, algorithm (its
label, `ddlsim.tasks.algorithms`), num_ranks and num_steps, counted on the compact schedule the
estimator would price (the algorithm's own, for one group of consecutive ranks), never from a
formula. Nothing is priced, so 65,536-rank schedules take milliseconds (RAMP Fig. 15, WRHT
Table 1). ``collectives`` gives each fabric kind its own algorithms; combinations an algorithm
cannot run are skipped and listed under the summary.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from ddlsim.core import units
from ddlsim.core.errors import ConfigError, InfeasibleError
from ddlsim.core.registry import TASKS
from ddlsim.core.types import CollectiveOp
from ddlsim.report.table import format_table
from ddlsim.tasks.algorithms import Choice, build_choices, build_per_fabric, check_rank_counts, choices_for, parse_ops
from ddlsim.tasks.base import Components, TaskResult


@dataclass
class StepsTaskConfig:
    """Every (algorithm, op, num_ranks) is one row; `size` is the message the schedule is built for."""

    name: str = "steps"
    ops: list[str] = field(default_factory=lambda: ["reduce_scatter"])
    num_ranks: list[int] = field(default_factory=lambda: [16, 256, 4096])
    algorithms: list[Any] = field(default_factory=list)
    collectives: dict[str, Any] = field(default_factory=dict)  # fabric kind -> algorithm config(s)
    size: str = "1MiB"


@TASKS.register("steps", StepsTaskConfig)
@dataclass(frozen=True)
class StepsTask:
    """Algorithmic steps of collectives on the fabric, per algorithm and scale (nothing priced)."""

    reads: ClassVar[tuple[str, ...]] = ("fabric", "collective")

    ops: tuple[CollectiveOp, ...]
    num_ranks: tuple[int, ...]
    algorithms: tuple[Choice, ...]
    collectives: tuple[tuple[str, tuple[Choice, ...]], ...]
    size_bytes: int
    name: str = "steps"

    @classmethod
    def from_config(cls, config: StepsTaskConfig) -> StepsTask:
        ops = parse_ops(config.ops)
        check_rank_counts(config.num_ranks)
        return cls(ops, tuple(config.num_ranks), build_choices(config.algorithms, "algorithms"),
                   tuple(build_per_fabric(config.collectives).items()),
                   units.parse_size_bytes(config.size, "size", allow_zero=False))

    def run(self, components: Components) -> TaskResult:
        from ddlsim.network.collectives.base import ScheduleRequest
        from ddlsim.network.placing import place_ranks

        fabric = components.fabric
        choices = choices_for(components.config, fabric.name, dict(self.collectives), self.algorithms,
                              components.algorithm)
        rows, skipped = [], []
        for choice in choices:
            if getattr(choice.algorithm, "is_selector", False):
                raise ConfigError("collective", choice.label, "task=steps counts one algorithm's steps; "
                                  "name algorithms, not a selector such as best")
            for op in self.ops:
                for ranks in self.num_ranks:
                    reason = choice.algorithm.supports(fabric, op, ranks)
                    if reason is not None:
                        skipped.append(f"{choice.label} {op.value} x {ranks}: {reason}")
                        continue
                    request = ScheduleRequest.single_group(op, ranks, fabric, size_bytes=self.size_bytes,
                                                          placement=place_ranks(fabric, ranks))
                    try:
                        steps = choice.algorithm.compact(request).num_steps
                    except InfeasibleError as error:
                        skipped.append(f"{choice.label} {op.value} x {ranks}: {error}")
                        continue
                    rows.append({"op": op.value, "fabric": fabric.name, "algorithm": choice.label,
                                 "num_ranks": ranks, "num_steps": steps})
        if not rows:
            raise InfeasibleError("no schedule could be built: " + "; ".join(skipped[:5]))
        summary = format_table(rows, {key: str for key in rows[0]})
        if skipped:
            summary += f"\nskipped {len(skipped)} point(s):\n" + "\n".join(f"  {line}" for line in skipped)
        return TaskResult(rows=rows, summary=summary)
