#!/usr/bin/env bash
# Create .venv and install the package with the given extra (local or test), once per change of
# pyproject.toml or of what the install builds (setup.py, the .proto files it turns into stubs).
set -euo pipefail
cd "$(dirname "$0")/.."
extra="${1:-local}"
python="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  "$python" -m venv .venv
fi
stamp=".venv/.armada-flyte-${extra}.$(cat pyproject.toml setup.py src/armada_flyte/protos/*.proto | sha256sum | cut -c1-16)"
if [ ! -f "$stamp" ]; then
  echo "==> installing armada-flyte[${extra}] into .venv (first run takes a minute)"
  .venv/bin/python -m pip install --quiet --upgrade pip
  .venv/bin/python -m pip install --quiet -e ".[${extra}]"
  touch "$stamp"
fi
