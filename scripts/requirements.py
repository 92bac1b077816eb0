"""Print the pip requirements to install before ddlsim itself, one per line.

Reads pyproject.toml, the single list of dependencies, and replaces torch and torchrec (which
scripts/install.sh installs first, CPU builds) by torchrec's own requirements minus the GPU-only
fbgemm-gpu. Usage: python scripts/requirements.py [extra ...]
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import re
import sys
import tomllib
from pathlib import Path

INSTALLED_FIRST = {"torch", "torchrec", "fbgemm-gpu", "fbgemm-gpu-cpu"}


def _name(requirement: str) -> str:
    return re.split(r"[\s;<>=!~\[]", requirement, maxsplit=1)[0].lower().replace("_", "-")


def requirements(extras: list[str]) -> list[str]:
    project = tomllib.loads((Path(__file__).resolve().parent.parent / "pyproject.toml").read_text())["project"]
    wanted = list(project["dependencies"])
    for extra in extras:
        wanted += project["optional-dependencies"][extra]
    with contextlib.suppress(importlib.metadata.PackageNotFoundError):
        wanted += [r for r in importlib.metadata.requires("torchrec") or [] if "extra ==" not in r]
    return [r for r in dict.fromkeys(wanted) if _name(r) not in INSTALLED_FIRST]


if __name__ == "__main__":
    print("\n".join(requirements(sys.argv[1:])))
