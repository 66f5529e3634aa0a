#!/usr/bin/env bash
# The test suite, with everything it needs: the venv, and the real parts the image tests use
# (Debian's docker-registry, and its Docker engine for the Docker SDK paths).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup-venv.sh test
scripts/install-test-parts.sh
exec .venv/bin/python -m pytest "$@"
