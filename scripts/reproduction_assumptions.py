"""Write docs/reproduction.md: every seed under its paper's assumptions beside ddlsim's own.

    python scripts/reproduction_assumptions.py [--out docs/reproduction.md] [--seed N ...]

Runs each seed's experiment with ``assumptions=<seed>_paper``, with the default ``faithful``, and
once per what-if (one assumption put back to ddlsim's setting), then writes the markdown tables
(`ddlsim.report.references.assumption_tables`) between the page's ``<!-- tables:begin -->`` and
``<!-- tables:end -->`` markers; the prose around them is kept.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from ddlsim.app.sweep.inprocess import run_sweep
from ddlsim.report.references.assumption_tables import SEEDS, seed_tables

ROOT = Path(__file__).resolve().parents[1]
BEGIN, END = "<!-- tables:begin -->", "<!-- tables:end -->"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "reproduction.md")
    parser.add_argument("--seed", type=int, nargs="*", default=None, help="indices into SEEDS (default: all)")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    sections = {}
    for index, seed in enumerate(SEEDS):
        if args.seed is None or index in args.seed:
            print(f"running {seed.title} ...", file=sys.stderr, flush=True)
            sections[seed.title] = seed_tables(seed, run_sweep)
    elapsed = time.perf_counter() - started
    page = args.out.read_text() if args.out.exists() else f"{BEGIN}\n{END}\n"  # read last: prose may change
    head, rest = page.split(BEGIN, 1)
    block, tail = rest.split(END, 1)
    kept = _sections(block)  # a --seed run keeps the other seeds' tables
    lines = []
    for seed in SEEDS:
        lines += sections.get(seed.title) or kept.get(seed.title, [])
    lines.append(f"_Last written by `python scripts/reproduction_assumptions.py"
                 f"{'' if args.seed is None else ' --seed ' + ' '.join(map(str, args.seed))}` in {elapsed:.0f} s._")
    args.out.write_text(head + BEGIN + "\n" + "\n".join(lines) + "\n" + END + tail)
    print(f"wrote {args.out}")
    return 0


def _sections(block: str) -> dict[str, list[str]]:
    """The seed sections of a written tables block, by title (the text after ``## ``)."""
    sections: dict[str, list[str]] = {}
    title = None
    for line in block.strip("\n").splitlines():
        if line.startswith("## "):
            title = line[3:]
            sections[title] = []
        if title is not None and not line.startswith("_Last written") and not line.startswith("_Tables written"):
            sections[title].append(line)
    return sections


if __name__ == "__main__":
    sys.exit(main())
