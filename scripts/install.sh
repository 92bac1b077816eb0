#!/usr/bin/env bash
# Install ddlsim on a bare machine: CPU torch first, then torchrec without its GPU-only
# fbgemm-gpu requirement, then every other dependency, then ddlsim itself (editable, or a
# built wheel with --wheel, as CI does in a fresh venv).
# Usage: bash scripts/install.sh [extra ...]                     e.g. bash scripts/install.sh dev
#        bash scripts/install.sh --wheel dist/ddlsim-*.whl [extra ...]
set -euo pipefail
wheel=""
if [[ "${1:-}" == "--wheel" ]]; then
    wheel=$(realpath "$2"); shift 2
fi
cd "$(dirname "$0")/.."
pip_install() { python -m pip install --disable-pip-version-check --quiet "$@"; }

pip_install torch==2.13.0
pip_install fbgemm-gpu-cpu==1.8.0
pip_install --no-deps torchrec==1.8.0
mapfile -t requirements < <(python scripts/requirements.py "$@")
pip_install "${requirements[@]}"
if [[ -n "$wheel" ]]; then
    pip_install --no-deps "$wheel"
else
    pip_install --no-deps -e .
fi
# From outside the checkout, so that an installed wheel is what imports.
(cd / && python -c "import fbgemm_gpu, torchrec, ddlsim") 2>/dev/null || {
    echo "install.sh: ddlsim, torchrec or fbgemm_gpu does not import" >&2; exit 1; }
echo "install.sh: ddlsim installed"
