#!/usr/bin/env bash
# The test suite, with everything it needs: the venv, the real parts the image tests use
# (Debian's docker-registry, and its Docker engine for the Docker SDK paths), then ruff (lint,
# import order, formatting) and pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup-venv.sh test
scripts/install-test-parts.sh
echo "==> ruff"
.venv/bin/ruff check src tests benchmarks examples deploy
.venv/bin/ruff format --check --quiet src tests benchmarks examples deploy
exec .venv/bin/python -m pytest "$@"
