"""The agreement table of the flow-level contention engine against SimGrid 4.1 (docs/contention.md).

    python scripts/contention_reference_table.py [--out FILE] [case ...]

Runs every case of `ddlsim.validation.contention_suite` (or the named ones) with the fluid engine,
concurrently and each collective alone, and on SimGrid concurrently, with its max-min CM02 model
(the fluid engine's equations) and with its TCP-like LV08 model, and prints one markdown row per
collective: its time alone, its completion time under contention in the fluid engine and in both
SimGrid models (seconds from its own start), the fluid engine's relative difference to each, and
the slowdown. The difference to LV08 is the uncertainty of a fluid model of TCP sharing. The table is also written to
`--out` (default outputs/contention/reference_table.md).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ddlsim.network.contention.flows import compile_jobs, run_flows
from ddlsim.validation.contention_suite import CASES, Case
from ddlsim.validation.simgrid_reference import run_problem

DEFAULT_OUT = Path("outputs") / "contention" / "reference_table.md"
HEADER = ("| case | fabric | collective | flows | alone s | fluid s | SimGrid CM02 s | rel. diff | SimGrid LV08 s "
          "| LV08 diff | slowdown |\n"
          "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")


@dataclass(frozen=True)
class Row:
    case: str
    fabric: str
    collective: str
    num_flows: int
    alone_s: float
    fluid_s: float
    simgrid_s: float
    lv08_s: float

    @property
    def relative_difference(self) -> float:
        return abs(self.fluid_s - self.simgrid_s) / self.simgrid_s

    @property
    def lv08_difference(self) -> float:
        """(fluid - LV08) / LV08: negative where TCP-like sharing is slower than max-min."""
        return (self.fluid_s - self.lv08_s) / self.lv08_s

    def markdown(self) -> str:
        return (f"| {self.case} | {self.fabric} | {self.collective} | {self.num_flows} | {self.alone_s:.6g} | "
                f"{self.fluid_s:.6g} | {self.simgrid_s:.6g} | {self.relative_difference:.1e} | {self.lv08_s:.6g} | "
                f"{100 * self.lv08_difference:+.1f} % | {self.fluid_s / self.alone_s:.3f} |")


def case_rows(case: Case) -> list[Row]:
    fabric, jobs = case.build()
    problem = compile_jobs(fabric, jobs)
    fluid = run_flows(fabric, jobs)
    reference = run_problem(problem)
    tcp_like = run_problem(problem, "LV08")
    rows = []
    for compiled, timing, steps, lv08 in zip(problem.jobs, fluid.jobs, reference, tcp_like):
        flows = sum(step.pair.size for step in compiled.steps)
        rows.append(Row(case.name, case.fabric, timing.label, flows, timing.isolated_s, timing.duration_s,
                        float(steps.max()) - timing.start_s, float(lv08.max()) - timing.start_s))
    return rows


def table(rows: list[Row]) -> str:
    worst = max(row.relative_difference for row in rows)
    spread = [row.lv08_difference for row in rows]
    cases = len({row.case for row in rows})
    fabrics = len({row.fabric for row in rows})
    lines = [HEADER, *(row.markdown() for row in rows), "",
             f"{cases} cases on {fabrics} fabric configurations, {len(rows)} collectives; largest relative "
             f"difference {worst:.1e} (tolerance 5 %). Times are seconds from each collective's own start; "
             f"'alone s' is the fluid engine's run of that collective on the empty fabric, and slowdown is "
             f"fluid s over alone s. Against SimGrid's TCP-like LV08 model the fluid engine is "
             f"{100 * min(spread):+.1f} % to {100 * max(spread):+.1f} % (median "
             f"{100 * float(np.median(spread)):+.1f} %): the uncertainty of a fluid model of TCP sharing."]
    return "\n".join(lines)


def suite_cli(argv: list[str] | None, description: str, default_out: Path,
              case_rows_of: Callable[[Case], list], table_of: Callable[[list], str]) -> None:
    """Run the named cases of the suite (default: all), print the table and write it to ``--out``."""
    parser = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("cases", nargs="*", help="case names (default: the whole suite)")
    parser.add_argument("--out", type=Path, default=default_out, help="where the markdown table is written")
    args = parser.parse_args(argv)
    chosen = [case for case in CASES if not args.cases or case.name in args.cases]
    start = time.perf_counter()
    text = table_of([row for case in chosen for row in case_rows_of(case)])
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text + "\n")
    print(text)
    print(f"\n{len(chosen)} cases in {time.perf_counter() - start:.1f} s; table written to {args.out}")


def main(argv: list[str] | None = None) -> None:
    suite_cli(argv, __doc__, DEFAULT_OUT, case_rows, table)
