#!/usr/bin/env bash
# Install ddlsim on a bare machine: CPU torch first, then torchrec without its GPU-only
# fbgemm-gpu requirement, then every other dependency, then ddlsim itself (editable from this
# checkout, or a built wheel with --wheel, as CI does in a fresh venv).
# Usage: bash scripts/install.sh [extra ...]                     e.g. bash scripts/install.sh dev
#        bash scripts/install.sh reference                         (SimGrid 4.1, the contention tests' reference:
#                                                                    a source build of about 10 minutes; CI runs it)
#        bash install.sh --wheel ddlsim-*.whl [extra ...]          (this file alone: no checkout needed)
#        bash install.sh --print-requirements [--wheel X.whl] [extra ...]   (print step 4's list, install nothing)
set -euo pipefail
wheel=""
print_only=""
reference=""
extras=()
for argument in "$@"; do  # `reference` is a build step, not an extra of pyproject.toml
    if [[ "$argument" == "reference" ]]; then reference=1; else extras+=("$argument"); fi
done
set -- "${extras[@]}"
if [[ "${1:-}" == "--print-requirements" ]]; then
    print_only=1; shift
fi
if [[ "${1:-}" == "--wheel" ]]; then
    wheel=$(realpath "$2"); shift 2
    source="$wheel"  # its METADATA lists the dependencies
else
    cd "$(dirname "$0")/.."
    source="$PWD/pyproject.toml"
fi
pip_install() { python -m pip install --disable-pip-version-check --quiet "$@"; }

# The dependencies of ddlsim (and its extras `$@`) from the wheel's METADATA or pyproject.toml,
# less torch, torchrec and fbgemm-gpu (installed first, CPU builds), plus torchrec's own
# requirements (once it is installed) less the GPU-only fbgemm-gpu.
requirements() {
    python - "$source" "$@" <<'PY'
import contextlib, importlib.metadata, re, sys, tomllib, zipfile
from email.parser import Parser

source, extras = sys.argv[1], sys.argv[2:]
FIRST = {"torch", "torchrec", "fbgemm-gpu", "fbgemm-gpu-cpu"}

def name(requirement):
    return re.split(r"[\s;<>=!~\[]", requirement, maxsplit=1)[0].lower().replace("_", "-")

if source.endswith(".whl"):
    with zipfile.ZipFile(source) as wheel:
        metadata = next(n for n in wheel.namelist() if n.count("/") == 1 and n.endswith(".dist-info/METADATA"))
        declared = Parser().parsestr(wheel.read(metadata).decode()).get_all("Requires-Dist") or []
    wanted = []
    for requirement in declared:
        spec, _, marker = requirement.partition(";")
        extra = re.search(r"""extra\s*==\s*["']([^"']+)["']""", marker)
        if extra is None:
            wanted.append(requirement.strip())
        elif extra.group(1) in extras:
            wanted.append(spec.strip())
else:
    project = tomllib.loads(open(source, encoding="utf-8").read())["project"]
    wanted = list(project["dependencies"])
    for extra in extras:
        wanted += project["optional-dependencies"][extra]
with contextlib.suppress(importlib.metadata.PackageNotFoundError):
    wanted += [r for r in importlib.metadata.requires("torchrec") or [] if "extra ==" not in r]
print("\n".join(r for r in dict.fromkeys(wanted) if name(r) not in FIRST))
PY
}

if [[ -n "$print_only" ]]; then
    requirements "$@"
    exit 0
fi

# SimGrid 4.1 (docs/contention.md), the flow-level reference the contention tests compare with, with
# `reference`: built from source (about 10 minutes on 2 cores; it needs a C++ compiler and Boost).
build_simgrid() {
    python -m pip show --quiet simgrid >/dev/null 2>&1 && { echo "install.sh: SimGrid is installed"; return 0; }
    local sudo=""
    [[ $EUID -ne 0 ]] && command -v sudo >/dev/null && sudo="sudo"
    if command -v apt-get >/dev/null && ! dpkg -s libboost-dev >/dev/null 2>&1; then
        $sudo apt-get install -y -q g++ cmake libboost-dev >/dev/null 2>&1 \
            || { $sudo apt-get update -q >/dev/null 2>&1 && $sudo apt-get install -y -q g++ cmake libboost-dev >/dev/null 2>&1; } \
            || echo "install.sh: could not install g++, cmake and libboost-dev; SimGrid may not build"
    fi
    echo "install.sh: building SimGrid 4.1 for the contention reference tests (about 10 minutes)"
    { pip_install "pybind11<3" cmake && pip_install --no-build-isolation simgrid==4.1; } \
        || echo "install.sh: SimGrid did not build; the SimGrid reference tests will be skipped"
}
if [[ -n "$reference" && ${#extras[@]} -eq 0 ]]; then  # `install.sh reference`: SimGrid only
    build_simgrid
    exit 0
fi

pip_install torch==2.13.0
pip_install fbgemm-gpu-cpu==1.8.0
pip_install --no-deps torchrec==1.8.0
mapfile -t deps < <(requirements "$@")
pip_install "${deps[@]}"
if [[ -n "$wheel" ]]; then
    pip_install --no-deps "$wheel"
else
    pip_install --no-deps -e .
fi
[[ -n "$reference" && -z "$wheel" ]] && build_simgrid
# From outside the checkout, so that an installed wheel is what imports.
(cd / && python -c "import fbgemm_gpu, torchrec, ddlsim") 2>/dev/null || {
    echo "install.sh: ddlsim, torchrec or fbgemm_gpu does not import" >&2; exit 1; }
echo "install.sh: ddlsim installed"
