#!/usr/bin/env bash
# A multi-platform image builder on this host, with no Docker daemon and no Docker Hub:
#   - a local registry: Debian's docker-registry on 127.0.0.1:PORT (plain HTTP), storage in the cache;
#   - BuildKit's buildkitd (built by scripts/build-image-tools.sh) with the OCI worker, Debian's
#     runc, host networking for RUN steps, and QEMU binfmt_misc for the foreign architecture;
#   - a buildx builder of the `remote` driver pointed at buildkitd's unix socket.
#
#   scripts/image-builder.sh start    start what is not running (idempotent); prints `export` lines
#   scripts/image-builder.sh env      print the export lines only
#   scripts/image-builder.sh stop [registry|buildkitd]...   stop them (default: both)
#   scripts/image-builder.sh status [registry|buildkitd]     prints `NAME: running|stopped` per part
#
# Environment: ARMADA_FLYTE_CACHE (default ~/.cache/armada-flyte), ARMADA_FLYTE_REGISTRY_PORT
# (default 5055), ARMADA_FLYTE_BUILDER (buildx builder name, default armada-flyte).
# State: $ARMADA_FLYTE_CACHE/image-builder/{registry,buildkit,run}. Needs root (buildkitd's OCI
# worker runs runc and mounts overlayfs).
set -euo pipefail

cache=${ARMADA_FLYTE_CACHE:-$HOME/.cache/armada-flyte}
port=${ARMADA_FLYTE_REGISTRY_PORT:-5055}
builder=${ARMADA_FLYTE_BUILDER:-armada-flyte}
state=$cache/image-builder
run_dir=$state/run
socket=$run_dir/buildkitd.sock
registry="127.0.0.1:$port"
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

log() { echo "==> $*" >&2; }

exports() {
  cat <<EOF
export ARMADA_FLYTE_REGISTRY=$registry
export ARMADA_FLYTE_BUILDER=$builder
export BUILDKIT_HOST=unix://$socket
EOF
}

alive() { [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

# wait_for NAME WHAT SECONDS COMMAND...: retry COMMAND every 0.2 s until it succeeds; fail with the end of
# NAME's log when NAME (started in the background, $run_dir/NAME.pid) exits first or SECONDS pass.
wait_for() {
  local name=$1 what=$2 limit=$3 deadline=$((SECONDS + $3)) why
  shift 3
  until "$@" >/dev/null 2>&1; do
    if ! alive "$run_dir/$name.pid"; then
      why="$name exited"
    elif [ "$SECONDS" -ge "$deadline" ]; then
      why="$what did not come up in ${limit}s"
    else
      sleep 0.2
      continue
    fi
    echo "image-builder: $why; the end of $run_dir/$name.log:" >&2
    tail -n 30 "$run_dir/$name.log" >&2 2>/dev/null || true
    return 1
  done
}

ensure_host_parts() {
  export DEBIAN_FRONTEND=noninteractive
  local packages=()
  command -v runc >/dev/null 2>&1 || packages+=(runc)
  command -v docker-registry >/dev/null 2>&1 || packages+=(docker-registry)
  dpkg -s qemu-user-static >/dev/null 2>&1 || packages+=(qemu-user-static)
  command -v update-binfmts >/dev/null 2>&1 || packages+=(binfmt-support)
  if [ ${#packages[@]} -gt 0 ]; then
    [ "$(id -u)" -eq 0 ] || { echo "image-builder: needs root to install ${packages[*]}" >&2; exit 1; }
    log "apt-get install ${packages[*]}"
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${packages[@]}" >/dev/null
  fi
  local qemu
  case "$(dpkg --print-architecture)" in
    amd64) qemu=qemu-aarch64 ;;
    arm64) qemu=qemu-x86_64 ;;
    *) return 0 ;;
  esac
  mountpoint -q /proc/sys/fs/binfmt_misc || mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc
  grep -qx enabled "/proc/sys/fs/binfmt_misc/$qemu" 2>/dev/null || update-binfmts --enable "$qemu"
  # The F (fix-binary) flag makes the kernel open the emulator once, at registration, so it
  # works inside build containers and chroots that have no qemu binary of their own.
  grep -q '^flags: .*F' "/proc/sys/fs/binfmt_misc/$qemu" \
    || log "warning: $qemu is registered without the F flag: emulated RUN steps may fail"
}

start_registry() {
  if alive "$run_dir/registry.pid"; then return; fi
  mkdir -p "$state/registry" "$run_dir"
  cat >"$run_dir/registry.yml" <<EOF
version: 0.1
log:
  level: warn
storage:
  filesystem:
    rootdirectory: $state/registry
  delete:
    enabled: true
http:
  addr: $registry
EOF
  log "docker-registry on $registry (storage $state/registry)"
  setsid docker-registry serve "$run_dir/registry.yml" >"$run_dir/registry.log" 2>&1 </dev/null &
  echo $! >"$run_dir/registry.pid"
  wait_for registry "the registry on $registry" 60 curl -fsS "http://$registry/v2/"
}

start_buildkitd() {
  if alive "$run_dir/buildkitd.pid"; then return; fi
  local tools
  tools=$("$here/build-image-tools.sh" | tail -n1)
  mkdir -p "$state/buildkit" "$run_dir"
  cat >"$run_dir/buildkitd.toml" <<EOF
root = "$state/buildkit"

[grpc]
  address = ["unix://$socket"]

[worker.oci]
  enabled = true
  platforms = ["linux/amd64", "linux/arm64"]
  # RUN steps share the host's network (there is no CNI here); they reach PyPI as the host does.
  networkMode = "host"
  gc = true
  maxUsedSpace = "20GB"

[worker.containerd]
  enabled = false

# The local registry speaks plain HTTP.
[registry."$registry"]
  http = true
  insecure = true
EOF
  rm -f "$socket"
  log "buildkitd on unix://$socket (state $state/buildkit)"
  setsid "$tools/buildkitd" --config "$run_dir/buildkitd.toml" >"$run_dir/buildkitd.log" 2>&1 </dev/null &
  echo $! >"$run_dir/buildkitd.pid"
  wait_for buildkitd "buildkitd" 120 "$tools/buildctl" --addr "unix://$socket" debug workers
}

ensure_builder() {
  local endpoint="unix://$socket"
  if docker buildx inspect "$builder" 2>/dev/null | grep -q "Endpoint: *$endpoint"; then
    return
  fi
  docker buildx rm "$builder" >/dev/null 2>&1 || true
  log "buildx builder $builder -> $endpoint (remote driver)"
  docker buildx create --name "$builder" --driver remote "$endpoint" >/dev/null
  docker buildx inspect --bootstrap "$builder" >/dev/null
}

stop_one() {
  local name=$1 pidfile=$run_dir/$1.pid pid i
  if alive "$pidfile"; then
    pid=$(cat "$pidfile")
    log "stopping $name (pid $pid)"
    kill "$pid"
    for ((i = 0; i < 50; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
    kill -0 "$pid" 2>/dev/null && kill -9 "$pid"
  fi
  rm -f "$pidfile"
}

case "${1:-start}" in
  start)
    ensure_host_parts
    start_registry
    start_buildkitd
    ensure_builder
    exports
    ;;
  env) exports ;;
  stop)
    shift
    # shellcheck disable=SC2068
    for name in ${@:-buildkitd registry}; do
      case "$name" in registry | buildkitd) stop_one "$name" ;; *) echo "image-builder: no part $name" >&2; exit 2 ;; esac
    done
    alive "$run_dir/buildkitd.pid" || rm -f "$socket"
    ;;
  status)
    shift
    # shellcheck disable=SC2068
    for name in ${@:-registry buildkitd}; do
      if alive "$run_dir/$name.pid"; then echo "$name: running (pid $(cat "$run_dir/$name.pid"))"; else echo "$name: stopped"; fi
    done
    ;;
  *) echo "usage: $0 start|env|stop|status" >&2; exit 2 ;;
esac
