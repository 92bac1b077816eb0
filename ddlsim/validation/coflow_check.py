"""How close the iteration-level contention model comes to flow level, on the concurrency suite.

    python scripts/contention_coflow_check.py [--out FILE] [case ...]

Inside an iteration (`ddlsim.training.contended`) a collective is one activity: its time alone,
and the bytes the physical bound says it must put on each declared resource
(`ddlsim.network.contention.resources`), spread evenly over that time. Flow level
(`ddlsim.network.contention.flows`, checked against SimGrid) runs every flow of its explicit
schedule on the fabric's own links. This runs each case of `ddlsim.validation.contention_suite`
both ways (the coflow run takes each collective's flow-level time alone as its work, so only
the sharing differs) and prints each collective's slowdown in both, and the coflow completion
time's error against flow level. Where the two disagree and why: docs/contention.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ddlsim.core.types import GroupLayout
from ddlsim.network.contention.flows import FlowJob, run_flows
from ddlsim.network.contention.fluid import FluidNetwork
from ddlsim.network.contention.resources import SharedResources
from ddlsim.network.placement import Placement
from ddlsim.validation.contention_suite import Case
from ddlsim.validation.contention_table import suite_cli

DEFAULT_OUT = Path("outputs") / "contention" / "coflow_check.md"


@dataclass(frozen=True)
class CoflowRow:
    case: str
    fabric: str
    collective: str
    alone_s: float
    flow_s: float
    coflow_s: float

    @property
    def error(self) -> float:
        """Coflow completion time over flow level's, minus 1."""
        return self.coflow_s / self.flow_s - 1

    def markdown(self) -> str:
        return (f"| {self.case} | {self.fabric} | {self.collective} | {self.flow_s / self.alone_s:.3f} | "
                f"{self.coflow_s / self.alone_s:.3f} | {100 * self.error:+.1f} % |")


def _placed(job: FlowJob) -> tuple[GroupLayout, Placement | None]:
    if isinstance(job.nodes, GroupLayout):
        return job.nodes, job.placement
    nodes = np.asarray(job.nodes, dtype=np.int64).reshape(-1)
    return GroupLayout(nodes.size), Placement(nodes.size, nodes)


def case_rows(case: Case) -> list[CoflowRow]:
    fabric, jobs = case.build()
    flows = run_flows(fabric, jobs)
    shared = SharedResources.of(fabric)
    network = FluidNetwork(shared.capacity_bps)
    for key, (job, timing) in enumerate(zip(jobs, flows.jobs)):
        layout, placement = _placed(job)
        demand = shared.demand(job.schedule.op, job.size_bytes, layout, job.schedule.root, placement)
        alone_s = timing.isolated_s
        network.submit(key, alone_s, demand.resources, demand.bits / alone_s if alone_s > 0 else demand.bits,
                       start_s=job.start_s, max_fill=1.0)
    ends: dict = {}
    while network.busy():
        ends.update(network.advance())
    return [CoflowRow(case.name, case.fabric, timing.label, timing.isolated_s, timing.duration_s,
                      ends[key] - timing.start_s) for key, timing in enumerate(flows.jobs)]


def table(rows: list[CoflowRow]) -> str:
    errors = np.abs([row.error for row in rows])
    lines = ["| case | fabric | collective | flow-level slowdown | coflow slowdown | coflow error |",
             "|---|---|---|---:|---:|---:|", *(row.markdown() for row in rows), "",
             f"{len(rows)} collectives: coflow completion time against flow level, median |error| "
             f"{100 * float(np.median(errors)):.1f} %, largest {100 * float(errors.max()):.1f} %; "
             f"{int(np.sum(errors < 0.05))} within 5 %."]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    suite_cli(argv, __doc__, DEFAULT_OUT, case_rows, table)
