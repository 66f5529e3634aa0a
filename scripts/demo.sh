#!/usr/bin/env bash
# The main job: a multi-architecture Flyte workflow through the connector into Armada (amd64 and
# arm64 node groups) and a local S3 blob store, then a table of jobs. Armada is the embedded server,
# or with --real-armada real Armada (v0.22.7) on 127.0.0.1 (scripts/real-armada.sh, docs/real-armada.md):
# built the first time (minutes, with progress), started with our executor for the run, and
# stopped after; REAL_ARMADA_PORT_BASE picks its ports. Other arguments go to examples/multiarch.py.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" != --real-armada ]; then
  scripts/setup-venv.sh local
  exec .venv/bin/python examples/multiarch.py "$@"
fi
shift
scripts/setup-venv.sh test # the executor and its stubs (real-armada.sh up builds them with grpcio-tools)
secrets="$(mktemp -t armada-flyte-demo-secrets.XXXXXX.yaml)"
trap 'scripts/real-armada.sh down || true; rm -f "$secrets"' EXIT
.venv/bin/python -c 'import sys, yaml
from armada_flyte.local.stack import blob_credentials_manifest
open(sys.argv[1], "w").write(yaml.safe_dump(blob_credentials_manifest()))' "$secrets"
echo "==> real Armada on 127.0.0.1 (scripts/real-armada.sh up: the first time it builds Armada and fetches Pulsar)" >&2
bed="$(REAL_ARMADA_SECRETS_FILE="$secrets" scripts/real-armada.sh up)"
url="$(printf '%s\n' "$bed" | sed -n 's/^ARMADA_URL=//p')"
echo "==> the main job on real Armada at $url" >&2
env -u ARMADA_URL .venv/bin/python examples/multiarch.py --armada-url "$url" "$@"
