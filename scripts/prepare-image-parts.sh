#!/usr/bin/env bash
# Everything the runtime-image tests use, built or started once and cached:
#   1. buildx + buildkitd from source (scripts/build-image-tools.sh), cached by version;
#   2. the local registry and buildkitd with the buildx builder (scripts/image-builder.sh);
#   3. the Debian base image (scripts/build-base-image.sh), cached by Debian snapshot;
#   4. the runtime image (scripts/build-runtime-image.sh), cached by input hash.
# Each step says whether it reused its cache. scripts/test.sh runs this under CI (or with
# ARMADA_FLYTE_IMAGE_PARTS=1):
#
#   eval "$(scripts/prepare-image-parts.sh start)"   # stdout: export lines for the tests
#   scripts/prepare-image-parts.sh stop              # stops only what `start` started
#
# `start` exports ARMADA_FLYTE_TEST_BUILDER, ARMADA_FLYTE_TEST_BASE_IMAGE and
# ARMADA_FLYTE_TEST_RUNTIME_IMAGE (what the tests read), the builder's variables, and
# ARMADA_FLYTE_IMAGE_PARTS_STARTED (the parts `stop` stops: those that were not running before).
#
# BASE_UPGRADE defaults to 0 here: the base gets Debian's release packages without the
# -updates/-security upgrade, which on a cold machine saves ~10 minutes (the arm64 upgrade runs
# under QEMU). It is a test base only; real users build FROM their own Python base image.
# Needs root (buildkitd, debootstrap). Timings: docs/admins/runtime-image.md.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export BASE_UPGRADE=${BASE_UPGRADE:-0}

log() { echo "==> $*" >&2; }

running_parts() { "$here/image-builder.sh" status | sed -n 's/: running.*//p'; }

started=""
finished=""
# A start that fails half way stops what it had started: nobody will know to stop it later.
stop_unless_finished() {
  # shellcheck disable=SC2086
  if [ -z "$finished" ] && [ -n "$started" ]; then "$here/image-builder.sh" stop $started >&2 || true; fi
}

start() {
  if [ "$(id -u)" -ne 0 ]; then
    log "not root: not preparing the image parts (the runtime-image tests skip locally, fail under CI)"
    return 0
  fi
  local begun step before part
  begun=$(date +%s)

  step=$(date +%s)
  "$here/build-image-tools.sh" >/dev/null
  log "image tools ready in $(( $(date +%s) - step ))s"

  before=$(running_parts)
  trap stop_unless_finished EXIT
  eval "$("$here/image-builder.sh" start)"
  for part in registry buildkitd; do
    grep -qx "$part" <<<"$before" || started="$started${started:+ }$part"
  done
  log "builder ready (started: ${started:-nothing, all was running})"

  step=$(date +%s)
  local base runtime
  base=$("$here/build-base-image.sh" | tail -n1)
  log "base image $base ready in $(( $(date +%s) - step ))s"

  step=$(date +%s)
  runtime=$("$here/build-runtime-image.sh" "$base" | tail -n1)
  log "runtime image $runtime ready in $(( $(date +%s) - step ))s"
  log "image parts ready in $(( $(date +%s) - begun ))s"

  finished=1
  "$here/image-builder.sh" env
  cat <<EOT
export ARMADA_FLYTE_TEST_BUILDER=$ARMADA_FLYTE_BUILDER
export ARMADA_FLYTE_TEST_BASE_IMAGE=$base
export ARMADA_FLYTE_TEST_RUNTIME_IMAGE=$runtime
export ARMADA_FLYTE_IMAGE_PARTS_STARTED='$started'
EOT
}

stop() {
  local parts=${ARMADA_FLYTE_IMAGE_PARTS_STARTED:-}
  if [ -z "$parts" ]; then return 0; fi
  # shellcheck disable=SC2086
  "$here/image-builder.sh" stop $parts
}

case "${1:-start}" in
  start) start ;;
  stop) stop ;;
  *) echo "usage: $0 start|stop" >&2; exit 2 ;;
esac
