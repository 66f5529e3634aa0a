#!/usr/bin/env bash
# The main job: a multi-architecture Flyte workflow through the connector into Armada (amd64 and
# arm64 node sets) and a local S3 blob store, then a table of jobs. Armada is the embedded server,
# or with --real-armada real Armada (v0.22.7) on 127.0.0.1 (scripts/real-armada.sh, docs/real-armada.md):
# built the first time (minutes, with progress), started with our executor on ports it finds free (or
# REAL_ARMADA_PORT_BASE's) for the run, and stopped after; the run logs in as the bed's user (basic auth,
# the password from the bed's 0600 file). With --real-kubernetes the bed has a Kubernetes cluster too
# (scripts/real-armada.sh up --kubernetes): Armada's own executor creates each task's pod, kube-scheduler
# binds it to a node (arm64 tasks to the arm64 nodes), our node agent runs it as the kubelet; the pods and
# their nodes are listed after the run (kubectl). Other arguments go to examples/multiarch.py.
set -euo pipefail
cd "$(dirname "$0")/.."
case "${1:-}" in
  --real-armada) up_options=() ;;
  --real-kubernetes) up_options=(--kubernetes) ;;
  *)
    scripts/setup-venv.sh local
    exec .venv/bin/python examples/multiarch.py "$@"
    ;;
esac
shift
scripts/setup-venv.sh test # the executor and its stubs (real-armada.sh up builds them with grpcio-tools)
secrets="$(mktemp -t armada-flyte-demo-secrets.XXXXXX.yaml)"
state=""
trap '[ -z "$state" ] || REAL_ARMADA_STATE="$state" scripts/real-armada.sh down || true; rm -f "$secrets"' EXIT
.venv/bin/python -c 'import sys, yaml
from armada_flyte.local.stack import blob_credentials_manifest
open(sys.argv[1], "w").write(yaml.safe_dump(blob_credentials_manifest()))' "$secrets"
echo "==> real Armada on 127.0.0.1 (scripts/real-armada.sh up ${up_options[*]}: the first time it builds what it runs)" >&2
bed="$(env -u REAL_ARMADA_STATE -u KUBECONFIG REAL_ARMADA_SECRETS_FILE="$secrets" scripts/real-armada.sh up "${up_options[@]}")"
value() { printf '%s\n' "$bed" | sed -n "s/^$1=//p"; }
state="$(value REAL_ARMADA_STATE)" url="$(value ARMADA_URL)"
echo "==> the main job on real Armada at $url" >&2
binoculars=()
[ -z "$(value ARMADA_FLYTE_BINOCULARS_URL)" ] || binoculars=(ARMADA_FLYTE_BINOCULARS_URL="$(value ARMADA_FLYTE_BINOCULARS_URL)")
env -u ARMADA_URL ARMADA_FLYTE_AUTH_USERNAME="$(value ARMADA_FLYTE_AUTH_USERNAME)" \
  ARMADA_FLYTE_AUTH_PASSWORD_FILE="$(value ARMADA_FLYTE_AUTH_PASSWORD_FILE)" "${binoculars[@]}" \
  .venv/bin/python examples/multiarch.py --armada-url "$url" "$@"
if [ -n "$(value KUBECONFIG)" ]; then
  echo
  echo "Kubernetes' view: each task's pod, created by Armada's executor, bound by kube-scheduler, run by the node agent:"
  kubectl --kubeconfig "$(value KUBECONFIG)" get pods -n default --sort-by=.metadata.creationTimestamp \
    -o custom-columns='POD:.metadata.name,NODE:.spec.nodeName,ARCH SELECTED:.spec.nodeSelector.kubernetes\.io/arch,PHASE:.status.phase'
fi
