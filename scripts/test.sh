#!/usr/bin/env bash
# The test suite, with everything it needs: the venv, the real parts the image tests use
# (Debian's docker-registry, and its Docker engine for the Docker SDK paths), then ruff (lint,
# import order, formatting) and pytest. Under CI (CI=true), or with ARMADA_FLYTE_IMAGE_PARTS=1,
# it also builds (or reuses from its caches) buildx, BuildKit, the Debian base image and the
# multi-arch runtime image, with a registry and buildkitd that it stops at the end
# (scripts/prepare-image-parts.sh).
#
# `--fast`: only the venv, ruff and the pure tests (`pytest -m pure`: no server, process or
# socket, tests/support/purity_guard.py holds them to it), in under a minute. Other arguments
# go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
fast=false
if [ "${1:-}" = --fast ]; then
  fast=true
  shift
fi
scripts/setup-venv.sh test
"$fast" || scripts/install-test-parts.sh
echo "==> ruff"
.venv/bin/ruff check src tests benchmarks examples deploy
.venv/bin/ruff format --check --quiet src tests benchmarks examples deploy
if "$fast"; then
  echo "==> pytest -m pure"
  exec .venv/bin/python -m pytest -m pure "$@"
fi
if [ "${CI:-}" = true ] || [ "${ARMADA_FLYTE_IMAGE_PARTS:-}" = 1 ]; then
  trap 'scripts/prepare-image-parts.sh stop' EXIT
  echo "==> image parts (scripts/prepare-image-parts.sh)"
  eval "$(scripts/prepare-image-parts.sh start)"
fi
.venv/bin/python -m pytest "$@"
