#!/usr/bin/env bash
# The main job: a multi-architecture Flyte workflow through the connector into the embedded
# Armada server (amd64 and arm64 node groups) and a local S3 blob store, then a table of jobs.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup-venv.sh local
exec .venv/bin/python examples/multiarch.py "$@"
