#!/usr/bin/env bash
# Builds the image tooling from source through the Go module proxy, at pinned versions:
#   docker-buildx (github.com/docker/buildx ./cmd/buildx), installed as a Docker CLI plugin;
#   buildkitd and buildctl (github.com/moby/buildkit ./cmd/buildkitd, ./cmd/buildctl).
# No prebuilt binary is downloaded: only Go modules, then `go build`.
#
# Binaries are cached by version under
#   ${ARMADA_FLYTE_CACHE:-$HOME/.cache/armada-flyte}/image-tools/{buildx,buildkit}-VERSION/
# and symlinked into .../image-tools/bin/, so a second run only checks and (re)installs the plugin.
#
# Environment:
#   BUILDX_VERSION, BUILDKIT_VERSION   module versions (defaults below)
#   DOCKER_CLI_PLUGIN_DIR              where docker-buildx goes (default: /usr/local/lib/docker/cli-plugins
#                                      as root, else ~/.docker/cli-plugins)
#   GO                                 the go command (default: go on PATH, else /usr/local/go/bin/go)
# Prints the bin directory on its last line (stdout), everything else goes to stderr.
set -euo pipefail

BUILDX_VERSION=${BUILDX_VERSION:-v0.38.2}
BUILDKIT_VERSION=${BUILDKIT_VERSION:-v0.34.2}
# The Go release to switch to when a module's go.mod asks for more than the local Go.
NEWER_GO_TOOLCHAIN=${NEWER_GO_TOOLCHAIN:-go1.27.3}

cache_root=${ARMADA_FLYTE_CACHE:-$HOME/.cache/armada-flyte}/image-tools
bin_dir=$cache_root/bin
if [ -z "${DOCKER_CLI_PLUGIN_DIR:-}" ]; then
  if [ "$(id -u)" -eq 0 ]; then
    DOCKER_CLI_PLUGIN_DIR=/usr/local/lib/docker/cli-plugins
  else
    DOCKER_CLI_PLUGIN_DIR=$HOME/.docker/cli-plugins
  fi
fi

log() { echo "==> $*" >&2; }

find_go() {
  if [ -n "${GO:-}" ]; then echo "$GO"; return; fi
  if command -v go >/dev/null 2>&1; then command -v go; return; fi
  if [ -x /usr/local/go/bin/go ]; then echo /usr/local/go/bin/go; return; fi
  echo "build-image-tools: no Go toolchain (set GO=/path/to/go)" >&2
  exit 1
}

# version_ge A B: true when Go version A >= B (both like 1.26.8).
version_ge() { [ "$(printf '%s\n%s\n' "$1" "$2" | sort -V | head -n1)" = "$2" ]; }

# build MODULE VERSION OUT_DIR NAME:PACKAGE:TAGS...
# Downloads MODULE@VERSION, copies it to a writable temporary directory (the module cache is
# read-only and go.sum may need entries added), and builds each package into OUT_DIR/NAME.
build() {
  local module=$1 version=$2 out=$3
  shift 3
  local missing=()
  local spec
  for spec in "$@"; do
    [ -x "$out/${spec%%:*}" ] || missing+=("$spec")
  done
  if [ ${#missing[@]} -eq 0 ]; then
    log "$module $version: cached in $out"
    return
  fi

  local go started dir work
  go=$(find_go)
  started=$(date +%s)
  log "$module $version: downloading through the Go module proxy"
  dir=$(cd /tmp && GOFLAGS= GOTOOLCHAIN=local "$go" mod download -json "$module@$version" \
        | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
  [ -n "$dir" ] && [ -f "$dir/go.mod" ] || { echo "build-image-tools: no module dir for $module@$version" >&2; exit 1; }

  local need have toolchain=local
  need=$(sed -n 's/^go \([0-9.]*\).*/\1/p' "$dir/go.mod" | head -n1)
  have=$(GOTOOLCHAIN=local "$go" env GOVERSION | sed 's/^go//')
  if [ -n "$need" ] && ! version_ge "$have" "$need"; then
    toolchain=$NEWER_GO_TOOLCHAIN
    log "$module needs Go $need, local Go is $have: using GOTOOLCHAIN=$toolchain"
  fi

  work=$(mktemp -d "${TMPDIR:-/tmp}/armada-flyte-image-tools.XXXXXX")
  # shellcheck disable=SC2064
  trap "rm -rf '$work'" RETURN
  cp -R "$dir/." "$work/src"
  chmod -R u+w "$work/src"
  mkdir -p "$out"

  local name pkg tags ldflags
  for spec in "${missing[@]}"; do
    IFS=: read -r name pkg tags <<<"$spec"
    ldflags="-s -w -X $module/version.Version=$version -X $module/version.Revision=$version"
    ldflags="$ldflags -X $module/version.Package=$module"
    log "go build $pkg ($module $version) -> $out/$name"
    (cd "$work/src" \
      && CGO_ENABLED=0 GOTOOLCHAIN=$toolchain GOFLAGS="-mod=mod -buildvcs=false" \
         "$go" build -trimpath -tags "$tags" -ldflags "$ldflags" -o "$out/$name.part" "$pkg")
    mv -f "$out/$name.part" "$out/$name"
  done
  log "$module $version: built in $(( $(date +%s) - started ))s"
}

buildx_dir=$cache_root/buildx-$BUILDX_VERSION
buildkit_dir=$cache_root/buildkit-$BUILDKIT_VERSION

build github.com/docker/buildx "$BUILDX_VERSION" "$buildx_dir" \
  "docker-buildx:./cmd/buildx:"
build github.com/moby/buildkit "$BUILDKIT_VERSION" "$buildkit_dir" \
  "buildkitd:./cmd/buildkitd:osusergo netgo static_build seccomp" \
  "buildctl:./cmd/buildctl:"

mkdir -p "$bin_dir"
ln -sfn "$buildx_dir/docker-buildx" "$bin_dir/docker-buildx"
ln -sfn "$buildkit_dir/buildkitd" "$bin_dir/buildkitd"
ln -sfn "$buildkit_dir/buildctl" "$bin_dir/buildctl"

# The Docker CLI finds plugins by file name in its plugin directories; a copy (not a symlink
# into the cache) keeps working if the cache is moved.
plugin=$DOCKER_CLI_PLUGIN_DIR/docker-buildx
if ! cmp -s "$buildx_dir/docker-buildx" "$plugin" 2>/dev/null; then
  log "installing $plugin"
  mkdir -p "$DOCKER_CLI_PLUGIN_DIR"
  install -m 0755 "$buildx_dir/docker-buildx" "$plugin.part"
  mv -f "$plugin.part" "$plugin"
fi

"$bin_dir/buildkitd" --version >&2
"$bin_dir/buildctl" --version >&2
if command -v docker >/dev/null 2>&1; then
  docker buildx version >&2
fi
echo "$bin_dir"
