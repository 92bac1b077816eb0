#!/usr/bin/env bash
# Install ddlsim on a bare machine: CPU torch first, then torchrec without its GPU-only
# fbgemm-gpu requirement, then every other dependency, then ddlsim itself (editable).
# Usage: bash scripts/install.sh [extra ...]     e.g. bash scripts/install.sh dev
set -euo pipefail
cd "$(dirname "$0")/.."
pip_install() { python -m pip install --disable-pip-version-check --quiet "$@"; }

pip_install torch==2.13.0
pip_install fbgemm-gpu-cpu==1.8.0
pip_install --no-deps torchrec==1.8.0
mapfile -t requirements < <(python scripts/requirements.py "$@")
pip_install "${requirements[@]}"
pip_install --no-deps -e .
python -c "import fbgemm_gpu, torchrec, ddlsim" 2>/dev/null || {
    echo "install.sh: ddlsim, torchrec or fbgemm_gpu does not import" >&2; exit 1; }
echo "install.sh: ddlsim installed"
