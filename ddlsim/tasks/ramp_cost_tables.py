"""`task=ramp_cost_tables`: RAMP Tables 3 (network cost) and 4 (network power) at 65,536 nodes,
recomputed from component counts and prices (`ddlsim.network.fabrics.ramp.cost_tables`).

One row per (table, system, oversubscription) with ddlsim's numbers and, as ``paper_<column>``,
the printed ones (`configs/reference/papers.yaml`). ``experiment=ramp_tables_3_4`` reports them
beside the paper.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ddlsim.core.registry import TASKS
from ddlsim.tasks.base import Components, TaskResult


@dataclass
class RampCostTablesTaskConfig:
    name: str = "ramp_cost_tables"


@TASKS.register("ramp_cost_tables", RampCostTablesTaskConfig)
@dataclass(frozen=True)
class RampCostTablesTask:
    """RAMP Tables 3 and 4 recomputed, with the printed values beside them."""

    reads: ClassVar[tuple[str, ...]] = ()

    name: str = "ramp_cost_tables"

    @classmethod
    def from_config(cls, config: RampCostTablesTaskConfig) -> RampCostTablesTask:
        return cls()

    def run(self, components: Components) -> TaskResult:
        from ddlsim.network.fabrics.ramp.cost_tables import table3_rows, table4_rows

        rows = [{"table": table, **row, "status": "ok"}
                for table, rows_of in (("table3", table3_rows()), ("table4", table4_rows())) for row in rows_of]
        return TaskResult(rows=rows, summary=f"{len(rows)} rows of RAMP Tables 3 and 4 recomputed")
