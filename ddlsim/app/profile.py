"""`ddlsim-profile`: the command line of `task=profile` (`ddlsim.tasks.profile`)."""

from __future__ import annotations

import sys

from ddlsim.app.cli import main as ddlsim_main


def main(argv: list[str] | None = None) -> int:
    """`ddlsim-profile`: `ddlsim task=profile` plus ``--force`` for ``task.replace=true``."""
    args = ["task.replace=true" if arg == "--force" else arg for arg in (sys.argv[1:] if argv is None else argv)]
    if not any(arg.startswith("task=") for arg in args):
        args.append("task=profile")
    if not any(arg.startswith("experiment=") for arg in args):  # not the default comparison sweep
        args.insert(0, "experiment=single")
    return ddlsim_main(args)
