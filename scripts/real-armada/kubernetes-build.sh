#!/usr/bin/env bash
# Build (once per version) what `scripts/real-armada.sh up --kubernetes` runs beside Armada: a Kubernetes
# control plane (kube-apiserver, kube-scheduler, kube-controller-manager from the Go module k8s.io/kubernetes),
# etcd (Debian's etcd-server package, unpacked, not installed), and Armada's own executor and Binoculars
# (from Armada's Go module, as scripts/real-armada/build.sh builds its server). Prints the cache directory
# on stdout; progress on stderr.
#
# Cache: ${ARMADA_FLYTE_CACHE:-~/.cache/armada-flyte}/real-kubernetes/<kubernetes>-armada-<armada>/
#   bin/{kube-apiserver,kube-scheduler,kube-controller-manager}   (k8s.io/kubernetes $KUBERNETES_VERSION)
#   bin/etcd                                                      (Debian's etcd-server, unpacked)
#   bin/{executor,binoculars}                                     (Armada $ARMADA_VERSION)
#   config/                      (Armada's default configs: the executor and Binoculars read config/<part>/)
#   kind/                        (Armada's namespace and priority-class manifests, _local/kind/)
#   BUILD-INFO                   (written last: its presence means the cache is complete)
# Build logs: <cache root>/build-logs/ (kept on failure; the error names the log).
#
# k8s.io/kubernetes replaces its staging modules (k8s.io/api, client-go, ...) with ./staging paths that a
# module download does not hold: a wrapper module of ours requires it and replaces each staging module with
# its published version (v0.<minor>.<patch>), read from the downloaded go.mod. Needs Go, the Go module proxy
# and Debian's package lists (apt-get download).
set -euo pipefail
# shellcheck source=scripts/lib/go.sh
. "$(dirname "$0")/../lib/go.sh"

KUBERNETES_VERSION="${KUBERNETES_VERSION:-v1.34.4}"
ARMADA_MODULE=github.com/armadaproject/armada
ARMADA_VERSION="${ARMADA_VERSION:-v0.22.7}"
ETCD_PACKAGE=etcd-server
KUBE_COMMANDS=(kube-apiserver kube-scheduler kube-controller-manager)
ARMADA_COMMANDS=(executor binoculars)
# The staging modules the proxy refuses, and that nothing built here needs.
UNPUBLISHED_STAGING=(k8s.io/sample-cli-plugin k8s.io/sample-controller)

say() { echo "real-kubernetes build: $*" >&2; }
die() { say "$*"; exit 1; }

root="${ARMADA_FLYTE_CACHE:-${HOME:-/root}/.cache/armada-flyte}/real-kubernetes"
dest="$root/$KUBERNETES_VERSION-armada-$ARMADA_VERSION"
logs="$root/build-logs"

is_complete() { [ -f "$dest/BUILD-INFO" ]; }
if is_complete; then
  echo "$dest"
  exit 0
fi

find_go || die "no Go toolchain: install Go 1.24+ (https://go.dev/dl, or Debian's golang-go) and put it on PATH"
command -v apt-get >/dev/null && command -v dpkg-deb >/dev/null || die "no apt-get/dpkg-deb to fetch etcd (a Debian machine is needed)"

mkdir -p "$root" "$logs"
exec 9>"$root/.lock-$KUBERNETES_VERSION-$ARMADA_VERSION"
command -v flock >/dev/null && flock 9
if is_complete; then
  echo "$dest"
  exit 0
fi

work="$(mktemp -d "${TMPDIR:-/tmp}/real-kubernetes-build.XXXXXX")"
stage="$(mktemp -d "$root/.stage-$KUBERNETES_VERSION.XXXXXX")"
cleanup() { chmod -R u+w "$work" 2>/dev/null || true; rm -rf "$work" "$stage"; }
trap cleanup EXIT
mkdir -p "$stage/bin"
start=$(date +%s)

fetch_etcd() { # Debian's package, unpacked: no install, no service started
  mkdir -p "$work/etcd"
  # A machine that never ran apt-get update has no package lists: as root, update them once and try again.
  (cd "$work/etcd" && apt-get download "$ETCD_PACKAGE") \
    || { [ "$(id -u)" -eq 0 ] && apt-get update -qq && (cd "$work/etcd" && apt-get download "$ETCD_PACKAGE"); } \
    || { echo "apt-get download $ETCD_PACKAGE failed: with no package lists, run apt-get update once"; return 1; }
  dpkg-deb -x "$work/etcd/"*.deb "$work/etcd/root"
  cp "$work/etcd/root/usr/bin/etcd" "$stage/bin/etcd"
  ETCD_VERSION="$(dpkg-deb -f "$work/etcd/"*.deb Version)"
  echo "$ETCD_VERSION" >"$work/etcd-version"
}

version_ldflags() { # what `kube-apiserver --version` and /version report (else v0.0.0)
  local minor patch pkg=k8s.io/component-base/version
  minor="$(echo "$KUBERNETES_VERSION" | cut -d. -f2)"
  echo "-s -w -X $pkg.gitVersion=$KUBERNETES_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor" \
    "-X $pkg.gitTreeState=clean -X $pkg.buildDate=$(date -u +%Y-%m-%dT%H:%M:%SZ)" \
    "-X k8s.io/client-go/pkg/version.gitVersion=$KUBERNETES_VERSION"
}

build_kubernetes() {
  download_module "k8s.io/kubernetes@$KUBERNETES_VERSION" "$work"
  [ -f "$GO_MODULE_DIR/go.mod" ] || { printf '%s\n' "$GO_MODULE_INFO"; return 1; }
  local staging_version="v0.${KUBERNETES_VERSION#v1.}" module wrapper="$work/kube"
  mkdir -p "$wrapper"
  {
    echo "module armada-flyte.local/kubernetes-build"
    echo
    echo "go $(sed -n 's/^go \([0-9.]*\)$/\1/p' "$GO_MODULE_DIR/go.mod" | head -n1)"
    echo
    echo "require k8s.io/kubernetes $KUBERNETES_VERSION"
    echo
    echo "replace ("
    # Each `k8s.io/x => ./staging/src/k8s.io/x` of k8s.io/kubernetes's go.mod, as the published module.
    for module in $(sed -n 's#^[[:space:]]*\(k8s.io/[a-z0-9-]*\) => ./staging/src/.*#\1#p' "$GO_MODULE_DIR/go.mod"); do
      case " ${UNPUBLISHED_STAGING[*]} " in *" $module "*) continue ;; esac
      echo "  $module => $module $staging_version"
    done
    echo ")"
  } >"$wrapper/go.mod"
  {
    echo "//go:build tools"
    echo
    echo "// Package tools names the commands built from this module, so go mod tidy keeps their requirements."
    echo "package tools"
    echo
    echo "import ("
    for module in "${KUBE_COMMANDS[@]}"; do echo "  _ \"k8s.io/kubernetes/cmd/$module\""; done
    echo ")"
  } >"$wrapper/tools.go"
  cat "$wrapper/go.mod"
  (cd "$wrapper" && GOWORK=off GOFLAGS=-mod=mod "$GO" mod tidy)
  local pkgs=()
  for module in "${KUBE_COMMANDS[@]}"; do pkgs+=("k8s.io/kubernetes/cmd/$module"); done
  (cd "$wrapper" && GOWORK=off GOFLAGS=-mod=mod CGO_ENABLED=0 \
    nice "$GO" build -trimpath -ldflags="$(version_ldflags)" -o "$stage/bin/" "${pkgs[@]}")
  for module in "${KUBE_COMMANDS[@]}"; do [ -x "$stage/bin/$module" ]; done
}

build_armada_parts() { # Armada's executor and Binoculars, from a writable copy of its module (its go.mod has replaces)
  mkdir -p "$work/armada-download"
  download_module "$ARMADA_MODULE@$ARMADA_VERSION" "$work/armada-download"
  [ -f "$GO_MODULE_DIR/go.mod" ] || { printf '%s\n' "$GO_MODULE_INFO"; return 1; }
  cp -R "$GO_MODULE_DIR" "$work/armada"
  chmod -R u+w "$work/armada"
  cp -R "$work/armada/config" "$stage/config"
  mkdir -p "$stage/kind"
  cp "$work/armada/_local/kind/namespace.yaml" "$work/armada/_local/kind/priorityclasses.yaml" "$stage/kind/"
  local c pkgs=()
  for c in "${ARMADA_COMMANDS[@]}"; do pkgs+=("./cmd/$c"); done
  (cd "$work/armada" && GOWORK=off GOFLAGS=-mod=mod CGO_ENABLED=0 \
    nice "$GO" build -trimpath -ldflags="-s -w" -o "$stage/bin/" "${pkgs[@]}")
  for c in "${ARMADA_COMMANDS[@]}"; do [ -x "$stage/bin/$c" ]; done
}

step() { # name, function: run it with its output in its log; on failure show the log's end and stop
  local name=$1 t0=$SECONDS
  if ! "$2" >"$logs/$name.log" 2>&1; then
    tail -n 30 "$logs/$name.log" >&2
    die "$name failed; log: $logs/$name.log"
  fi
  say "$name: $((SECONDS - t0))s"
}

say "building Kubernetes $KUBERNETES_VERSION (apiserver, scheduler, controller-manager), Armada $ARMADA_VERSION's" \
  "executor and Binoculars, and unpacking Debian's etcd (minutes on 2 cores; logs in $logs)"
step "etcd" fetch_etcd
# One after the other: each go build already uses every core.
step "kubernetes-$KUBERNETES_VERSION" build_kubernetes
step "armada-$ARMADA_VERSION-executor-binoculars" build_armada_parts

end=$(date +%s)
{
  echo "kubernetes=k8s.io/kubernetes@$KUBERNETES_VERSION (${KUBE_COMMANDS[*]})"
  echo "armada=$ARMADA_MODULE@$ARMADA_VERSION (${ARMADA_COMMANDS[*]})"
  echo "etcd=debian:$ETCD_PACKAGE=$(cat "$work/etcd-version")"
  echo "go=$("$GO" version | awk '{print $3}')"
  echo "built_at=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "build_seconds=$((end - start))"
} >"$stage/BUILD-INFO"
chmod 755 "$stage"
rm -rf "$dest"
mv "$stage" "$dest"
trap - EXIT
chmod -R u+w "$work" 2>/dev/null || true
rm -rf "$work"
say "built in $((end - start))s: $dest"
echo "$dest"
