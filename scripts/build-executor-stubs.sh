#!/usr/bin/env bash
# Generate the Python stubs of Armada's executor API (the gRPC service real Armada's scheduler
# offers executors) from Armada's Go module at a pinned release, for `armada-flyte executor`.
#
#   scripts/build-executor-stubs.sh        # prints the stubs folder on stdout
#
# Output (ARMADA_FLYTE_CACHE defaults to ~/.cache/armada-flyte):
#   $ARMADA_FLYTE_CACHE/executor-stubs/<version>/armada_executorapi/   (an importable package)
#   $ARMADA_FLYTE_CACHE/executor-stubs/<version>/BUILD-INFO            (what built them; written last)
# `armada-flyte executor` looks there, or in ARMADA_FLYTE_EXECUTOR_STUBS when that is set.
#
# The stubs import armada_client's own generated modules for the Kubernetes protos and
# api/submit.proto (scripts/executor_stubs.py), so each .proto file is registered once per process.
# Nothing from Armada is written into this repository. Progress goes to stderr.
#
# Needs: a Go toolchain (to fetch the module when it is not in the module cache) and the
# project's .venv (grpcio-tools, armada-client: scripts/setup-venv.sh test).
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/lib/go.sh
. scripts/lib/go.sh

ARMADA_MODULE=github.com/armadaproject/armada
ARMADA_VERSION="${ARMADA_VERSION:-v0.22.7}"
dest="${ARMADA_FLYTE_CACHE:-${HOME:-/root}/.cache/armada-flyte}/executor-stubs/$ARMADA_VERSION"
python="${PYTHON:-.venv/bin/python}"

say() { echo "build-executor-stubs: $*" >&2; }

case "${1:-}" in
  "") ;;
  -h|--help) sed -n '2,17p' "$0"; exit 0 ;;
  *) echo "unknown argument: $1 (try --help)" >&2; exit 2 ;;
esac

# Stubs need a protobuf runtime at least as new as the grpcio-tools that generated them: built by
# another grpcio-tools, they are built again.
tools="$("$python" -c 'import importlib.metadata as m; print(m.version("grpcio-tools"))')" \
  || { say "no grpcio-tools in $python (scripts/setup-venv.sh test installs it)"; exit 1; }
if [ -d "$dest/armada_executorapi" ] && grep -qx "grpcio-tools=$tools" "$dest/BUILD-INFO" 2>/dev/null; then
  say "cached: $dest"
  echo "$dest"
  exit 0
fi

if ! find_go; then
  say "no Go toolchain found (PATH or /usr/local/go/bin/go): it fetches $ARMADA_MODULE@$ARMADA_VERSION"
  exit 1
fi
work="$(mktemp -d "${TMPDIR:-/tmp}/executor-stubs.XXXXXX")"
trap 'rm -rf "$work"' EXIT
download_module "$ARMADA_MODULE@$ARMADA_VERSION" "$work"  # a cached module costs nothing
moddir="$GO_MODULE_DIR"
if [ -z "$moddir" ] || [ ! -f "$moddir/pkg/executorapi/executorapi.proto" ]; then
  say "could not locate the downloaded module; go said:"
  printf '%s\n' "$GO_MODULE_INFO" >&2
  exit 1
fi

mkdir -p "$(dirname "$dest")"
"$python" scripts/executor_stubs.py "$moddir" "$dest" "$ARMADA_VERSION"
say "built: $dest"
echo "$dest"
