#!/usr/bin/env bash
# The test suite, with everything it needs: the venv, the real parts the image tests use
# (Debian's docker-registry, and its Docker engine for the Docker SDK paths), then ruff (lint,
# import order, formatting) and pytest. Under CI (CI=true), or with ARMADA_FLYTE_IMAGE_PARTS=1,
# it also builds (or reuses from its caches) buildx, BuildKit, the Debian base image and the
# multi-arch runtime image, with a registry and buildkitd that it stops at the end
# (scripts/prepare-image-parts.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup-venv.sh test
scripts/install-test-parts.sh
echo "==> ruff"
.venv/bin/ruff check src tests benchmarks examples deploy
.venv/bin/ruff format --check --quiet src tests benchmarks examples deploy
if [ "${CI:-}" = true ] || [ "${ARMADA_FLYTE_IMAGE_PARTS:-}" = 1 ]; then
  trap 'scripts/prepare-image-parts.sh stop' EXIT
  echo "==> image parts (scripts/prepare-image-parts.sh)"
  eval "$(scripts/prepare-image-parts.sh start)"
fi
.venv/bin/python -m pytest "$@"
