"""How close the iteration model comes to flow level, per collective, before and after per-step links.

    python scripts/contention_link_check.py [--out FILE] [case ...]

Runs every case of `ddlsim.validation.contention_suite` and `ddlsim.validation.iteration_cases`
three ways: flow level (`ddlsim.network.contention.flows`, every flow of the explicit schedules on
the fabric's links, checked against SimGrid), the coflow model (one activity per collective on the
declared resources, as iterations were solved before issue 33: `coflow_check`), and per-step link
loads (the compact schedule's steps on the fabric's own links, shared flow by flow: what iterations
now use, `ddlsim.network.contention.step_loads`). In both models each collective's time alone is
scaled to its flow-level time alone (an iteration scales it to the collective's priced time), so
only the sharing differs. Error: completion time over flow level's, minus 1.
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ddlsim.core.registry import build
from ddlsim.core.types import GroupLayout
from ddlsim.network.collectives.base import ScheduleRequest
from ddlsim.network.contention.flows import FlowJob, run_flows
from ddlsim.network.contention.phase_run import PhasedCall, run_phased
from ddlsim.network.contention.step_loads import call_phases
from ddlsim.network.placement import Placement
from ddlsim.validation.coflow_check import case_rows as coflow_rows
from ddlsim.validation.contention_suite import CASES, Case
from ddlsim.validation.iteration_cases import ITERATION_CASES

DEFAULT_OUT = Path("outputs") / "contention" / "link_check.md"


@dataclass(frozen=True)
class LinkRow:
    case: str
    fabric: str
    collective: str
    alone_s: float
    flow_s: float
    coflow_s: float
    link_s: float

    @property
    def coflow_error(self) -> float:
        return self.coflow_s / self.flow_s - 1

    @property
    def error(self) -> float:
        """Per-step link model's completion time over flow level's, minus 1."""
        return self.link_s / self.flow_s - 1

    def markdown(self) -> str:
        return (f"| {self.case} | {self.fabric} | {self.collective} | {self.flow_s / self.alone_s:.3f} | "
                f"{self.coflow_s / self.alone_s:.3f} | {100 * self.coflow_error:+.1f} % | "
                f"{self.link_s / self.alone_s:.3f} | {100 * self.error:+.1f} % |")


def placed(job: FlowJob) -> tuple[GroupLayout, Placement | None]:
    """The layout and placement of a job's groups (explicit nodes: one row per group)."""
    if isinstance(job.nodes, GroupLayout):
        return job.nodes, job.placement
    nodes = np.atleast_2d(np.asarray(job.nodes, dtype=np.int64))
    groups, size = nodes.shape
    return GroupLayout(size, 1, groups * size), Placement(groups * size, nodes.ravel())


def link_ends(fabric, jobs: list[FlowJob], alone_s: list[float]) -> list[float]:
    """Each job's end under per-step link loads, its time alone scaled to `alone_s`."""
    calls = []
    for job, alone in zip(jobs, alone_s):
        layout, placement = placed(job)
        placement = placement if placement is not None else fabric.place(layout.job_ranks)
        schedule = job.schedule
        request = ScheduleRequest(schedule.op, layout.size, schedule.root, job.size_bytes, fabric, layout, placement)
        compact = fabric.prepare(build("collective", schedule.algorithm).compact(request), layout, placement)
        phases = call_phases(fabric, compact, layout, placement, job.size_bytes)
        own = phases.time_s
        calls.append(PhasedCall(phases, job.start_s, alone / own if own > 0 else 1.0))
    return run_phased(fabric.capacity_bps(), calls)


def case_rows(case: Case) -> list[LinkRow]:
    fabric, jobs = case.build()
    flows = run_flows(fabric, jobs)
    coflows = coflow_rows(case)
    ends = link_ends(fabric, jobs, [timing.isolated_s for timing in flows.jobs])
    return [LinkRow(case.name, case.fabric, timing.label, timing.isolated_s, timing.duration_s, coflow.coflow_s,
                    end - timing.start_s) for timing, coflow, end in zip(flows.jobs, coflows, ends)]


def _summary(name: str, errors: np.ndarray) -> str:
    return (f"{name}: median |error| {100 * float(np.median(errors)):.1f} %, largest "
            f"{100 * float(errors.max()):.1f} %, {int(np.sum(errors < 0.05))} of {errors.size} within 5 %")


def table(rows: list[LinkRow]) -> str:
    lines = ["| case | fabric | collective | flow-level slowdown | coflow slowdown | coflow error | "
             "per-step links slowdown | per-step links error |",
             "|---|---|---|---:|---:|---:|---:|---:|", *(row.markdown() for row in rows), "",
             f"{len(rows)} collectives against flow level. "
             + _summary("Before (coflow)", np.abs([row.coflow_error for row in rows])) + ". "
             + _summary("After (per-step links)", np.abs([row.error for row in rows])) + "."]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("cases", nargs="*", help="case names (default: the suite and the iteration cases)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="where the markdown table is written")
    args = parser.parse_args(argv)
    chosen = [case for case in (*CASES, *ITERATION_CASES) if not args.cases or case.name in args.cases]
    start = time.process_time()
    text = table([row for case in chosen for row in case_rows(case)])
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text + "\n")
    print(text)
    print(f"\n{len(chosen)} cases in {time.process_time() - start:.1f} s of CPU time; table written to {args.out}")
