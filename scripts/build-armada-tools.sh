#!/usr/bin/env bash
# Build Armada's own command-line tools (armadactl, testsuite) and its e2e
# armadactl tests (a Go test binary) from Armada's Go module at a pinned
# release, and cache them per version.
#
#   scripts/build-armada-tools.sh            # prints the bin dir on stdout
#   scripts/build-armada-tools.sh --env      # prints shell assignments instead:
#                                            #   ARMADA_TOOLS_DIR, ARMADA_TOOLS_BIN,
#                                            #   ARMADA_TESTCASES, ARMADA_VERSION,
#                                            #   ARMADA_PYTHON_CLIENT, ARMADA_E2E_ARMADACTL_TEST
#   eval "$(scripts/build-armada-tools.sh --env)"
#
# Cache layout (ARMADA_FLYTE_CACHE defaults to ~/.cache/armada-flyte):
#   $ARMADA_FLYTE_CACHE/armada-tools/<version>/bin/{armadactl,testsuite}
#   $ARMADA_FLYTE_CACHE/armada-tools/<version>/bin/armadactl-e2e.test
#                                  (`go test -c ./e2e/armadactl_test`; added to a cache
#                                   built before it existed without rebuilding the rest)
#   $ARMADA_FLYTE_CACHE/armada-tools/<version>/testcases/   (Armada's YAML cases)
#   $ARMADA_FLYTE_CACHE/armada-tools/<version>/python-client/{examples,integration}/
#                                                            (its Python client's examples and tests)
#   $ARMADA_FLYTE_CACHE/armada-tools/<version>/BUILD-INFO    (written last)
#
# A second run finds BUILD-INFO and returns at once. Nothing from Armada is
# written into this repository. Progress goes to stderr; stdout carries only
# the answer, so the script can be used in $(...).
#
# Needs: a Go toolchain (PATH or /usr/local/go/bin) and the Go module proxy.
# Override the release with ARMADA_VERSION=vX.Y.Z (the default is pinned
# below: v0.22.7 is the last release before the armada commit 207cc9e that
# shared/ARMADA_FACTS.md was read at; the only later commits add "requestor"
# fields).
set -euo pipefail
# shellcheck source=scripts/lib/go.sh
. "$(dirname "$0")/lib/go.sh"

ARMADA_MODULE=github.com/armadaproject/armada
ARMADA_VERSION="${ARMADA_VERSION:-v0.22.7}"

mode=bin
case "${1:-}" in
  "") ;;
  --env) mode=env ;;
  -h|--help) sed -n '2,29p' "$0"; exit 0 ;;
  *) echo "unknown argument: $1 (try --help)" >&2; exit 2 ;;
esac

cache_root="${ARMADA_FLYTE_CACHE:-${HOME:-/root}/.cache/armada-flyte}/armada-tools"
dest="$cache_root/$ARMADA_VERSION"

say() { echo "build-armada-tools: $*" >&2; }

answer() {
  if [ "$mode" = env ]; then
    printf 'ARMADA_VERSION=%q\nARMADA_TOOLS_DIR=%q\nARMADA_TOOLS_BIN=%q\nARMADA_TESTCASES=%q\nARMADA_PYTHON_CLIENT=%q\nARMADA_E2E_ARMADACTL_TEST=%q\n' \
      "$ARMADA_VERSION" "$dest" "$dest/bin" "$dest/testcases" "$dest/python-client" "$dest/bin/$E2E_TEST"
  else
    echo "$dest/bin"
  fi
}

E2E_TEST=armadactl-e2e.test

has_tools() {
  [ -f "$dest/BUILD-INFO" ] && [ -x "$dest/bin/armadactl" ] \
    && [ -x "$dest/bin/testsuite" ] && [ -d "$dest/testcases" ] && [ -d "$dest/python-client" ]
}

is_complete() {
  has_tools && [ -x "$dest/bin/$E2E_TEST" ]
}

if is_complete; then
  say "cached: $dest"
  answer
  exit 0
fi

if ! find_go; then
  say "no Go toolchain found (PATH or /usr/local/go/bin/go)"
  exit 1
fi

mkdir -p "$cache_root"

# One builder at a time per cache; a waiting second caller then finds the result.
exec 9>"$cache_root/.lock-$ARMADA_VERSION"
if command -v flock >/dev/null 2>&1; then
  flock 9
fi
if is_complete; then
  say "cached (built by a concurrent run): $dest"
  answer
  exit 0
fi

work="$(mktemp -d "${TMPDIR:-/tmp}/armada-tools.XXXXXX")"
stage="$(mktemp -d "$cache_root/.stage-$ARMADA_VERSION.XXXXXX")"
cleanup() { chmod -R u+w "$work" 2>/dev/null || true; rm -rf "$work" "$stage"; }
trap cleanup EXIT

# Keep a go.work or a project's GOFLAGS from steering this build.
export GOWORK=off
export GOFLAGS=-mod=mod
export CGO_ENABLED=0

start=$(date +%s)
say "downloading $ARMADA_MODULE@$ARMADA_VERSION from the Go module proxy"
download_module "$ARMADA_MODULE@$ARMADA_VERSION" "$work"
info="$GO_MODULE_INFO"
moddir="$GO_MODULE_DIR"
if [ -z "$moddir" ] || [ ! -f "$moddir/go.mod" ]; then
  say "could not locate the downloaded module; go said:"
  printf '%s\n' "$info" >&2
  exit 1
fi

# The module cache is read-only and Armada's go.mod carries replace
# directives, which only take effect in the main module: build a copy.
src="$work/armada"
cp -R "$moddir" "$src"
chmod -R u+w "$src"

build_e2e_test() {  # into $1
  say "building the e2e armadactl tests (go test -c ./e2e/armadactl_test)"
  (cd "$src" && "$GO" test -c -trimpath -ldflags="-s -w" -o "$1/$E2E_TEST" ./e2e/armadactl_test)
}

if has_tools; then
  # A cache from before the e2e test binary: add it beside the tools.
  mkdir -p "$stage/bin"
  build_e2e_test "$stage/bin"
  mv "$stage/bin/$E2E_TEST" "$dest/bin/$E2E_TEST"
  echo "e2e_test_added_at=$(date -u +%Y-%m-%dT%H:%M:%SZ)" >>"$dest/BUILD-INFO"
  say "added $E2E_TEST in $(($(date +%s) - start))s: $dest"
  answer
  exit 0
fi

say "building armadactl and testsuite ($("$GO" version | awk '{print $3}'); this takes minutes on 2 cores)"
mkdir -p "$stage/bin"
(
  cd "$src"
  "$GO" build -trimpath -ldflags="-s -w" -o "$stage/bin/" ./cmd/armadactl ./cmd/testsuite
)
build_e2e_test "$stage/bin"

cp -R "$src/testsuite/testcases" "$stage/testcases"
mkdir -p "$stage/python-client"
cp -R "$src/client/python/examples" "$src/client/python/tests/integration" "$stage/python-client/"
chmod -R u+w "$stage/testcases" "$stage/python-client"

end=$(date +%s)
{
  echo "module=$ARMADA_MODULE"
  echo "version=$ARMADA_VERSION"
  printf '%s\n' "$info" | sed -n 's/^[[:space:]]*"Hash": "\(.*\)",\{0,1\}$/commit=\1/p'
  echo "go=$("$GO" version | awk '{print $3}')"
  echo "built_at=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "build_seconds=$((end - start))"
} >"$stage/BUILD-INFO.tmp"
mv "$stage/BUILD-INFO.tmp" "$stage/BUILD-INFO"
chmod 755 "$stage"  # mktemp made it private

# Swap the finished tree into place (a half-built one never sits at $dest).
rm -rf "$dest"
mv "$stage" "$dest"
say "built in $((end - start))s: $dest"
answer
