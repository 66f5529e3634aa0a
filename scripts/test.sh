#!/usr/bin/env bash
# The test suite, with everything it needs: the venv, the real parts the image tests use
# (Debian's docker-registry, and its Docker engine for the Docker SDK paths), then ruff (lint,
# import order, formatting), lint-imports (the layer contracts in pyproject.toml) and pytest. Under
# CI (CI=true), or with ARMADA_FLYTE_IMAGE_PARTS=1, it also builds (or reuses from its caches)
# buildx, BuildKit, the Debian base image and the multi-arch runtime image, with a registry and buildkitd that it stops at the end
# (scripts/prepare-image-parts.sh). Under CI, or with ARMADA_FLYTE_REAL_ARMADA=1, a last tier
# starts real Armada on 127.0.0.1 (scripts/real-armada.sh, docs/real-armada.md; the executor from
# REAL_ARMADA_EXECUTOR: ours, fake or none, default ours, holding the Secrets the e2e pods read) and
# runs with --armada real, in groups side by side, each on a bed of its own with ports it finds free:
# the conformance suite with Armada's own cases, the connector's production path in two (its runs; the
# connector service's tests) and the fault tests in two (Armada's parts; the rest); then, a second wave, on beds with a real
# Kubernetes API server and Armada's own executor (up --kubernetes; REAL_ARMADA_KUBERNETES=0 leaves them
# out), what only Kubernetes shows and the production path's two groups again; a group is its pytest
# marker (REAL_TIER_GROUPS in tests/conftest.py); then it stops the beds;
# scripts/differential-report.py sets the two servers' results side by side (docs/differential.md).
#
# `--fast`: only the venv, ruff, lint-imports and the pure tests (`pytest -m pure`: no server, process or
# socket, tests/support/purity_guard.py holds them to it), in under a minute. Other arguments
# go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
fast=false
if [ "${1:-}" = --fast ]; then
  fast=true
  shift
fi
cleanups=()
trap 'for step in "${cleanups[@]}"; do $step || true; done' EXIT
scripts/setup-venv.sh test
"$fast" || scripts/install-test-parts.sh
echo "==> ruff"
.venv/bin/ruff check src tests benchmarks examples deploy
.venv/bin/ruff format --check --quiet src tests benchmarks examples deploy
echo "==> lint-imports (the layer contracts in pyproject.toml)"
contracts="$(.venv/bin/lint-imports --no-logo --no-cache 2>&1)" || { echo "$contracts"; exit 1; }
echo "$contracts" | grep -E '^Contracts: '
if "$fast"; then
  echo "==> pytest -m pure"
  exec .venv/bin/python -m pytest -m pure "$@"
fi
real_tier=false
if [ "${CI:-}" = true ] || [ "${ARMADA_FLYTE_REAL_ARMADA:-}" = 1 ]; then real_tier=true; fi
# Cold, the builds below take minutes each and wait on downloads as much as on CPU: they start now,
# beside the image parts, and are waited for where they are needed (each takes a lock and reuses its
# cache, so a test that calls the script again waits for this build rather than racing it).
build_logs="$(mktemp -d -t armada-flyte-builds.XXXXXX)"
cleanups+=("rm -rf $build_logs")
armada_tools_build=""
if [ "${CI:-}" = true ]; then # locally, the tests that need them build them (or skip)
  setsid scripts/build-armada-tools.sh >"$build_logs/armada-tools.log" 2>&1 &
  armada_tools_build=$!
fi
kubernetes_tier=false
if "$real_tier"; then
  setsid scripts/real-armada/build.sh >"$build_logs/real-armada.log" 2>&1 &
  real_armada_build=$!
  if [ "${REAL_ARMADA_KUBERNETES:-1}" != 0 ]; then
    kubernetes_tier=true
    # Kubernetes' control plane, etcd, Armada's executor and Binoculars (scripts/real-armada/kubernetes-build.sh)
    setsid scripts/real-armada/kubernetes-build.sh >"$build_logs/real-kubernetes.log" 2>&1 &
    kubernetes_build=$!
  fi
fi
stop_builds() { # a run that ends early leaves no build behind (each runs in its own process group)
  local pid
  for pid in $armada_tools_build ${real_armada_build:-} ${kubernetes_build:-}; do kill -- "-$pid" 2>/dev/null || true; done
}
cleanups+=(stop_builds)
wait_for_build() { # pid, log: a failed build fails the run with its log
  wait "$1" || { cat "$2" >&2; echo "a build failed (its log is above)" >&2; exit 1; }
}
if [ "${CI:-}" = true ] || [ "${ARMADA_FLYTE_IMAGE_PARTS:-}" = 1 ]; then
  cleanups+=("scripts/prepare-image-parts.sh stop")
  echo "==> image parts (scripts/prepare-image-parts.sh)"
  eval "$(scripts/prepare-image-parts.sh start)"
fi
[ -z "$armada_tools_build" ] || wait_for_build "$armada_tools_build" "$build_logs/armada-tools.log"
.venv/bin/python -m pytest --durations=15 "$@"
if "$real_tier"; then
  wait_for_build "$real_armada_build" "$build_logs/real-armada.log"
  ! "$kubernetes_tier" || wait_for_build "$kubernetes_build" "$build_logs/real-kubernetes.log"
  echo "==> real Armada (scripts/real-armada.sh up; the conformance suite, the production path and the faults with --armada real)"
  REAL_ARMADA_SECRETS_FILE="$(mktemp -t armada-flyte-bed-secrets.XXXXXX.yaml)"
  cleanups+=("rm -f $REAL_ARMADA_SECRETS_FILE")
  export REAL_ARMADA_SECRETS_FILE
  .venv/bin/python -c 'import pathlib, sys; sys.path.insert(0, "tests")
from support.real_armada import write_bed_secrets
write_bed_secrets(pathlib.Path(sys.argv[1]))' "$REAL_ARMADA_SECRETS_FILE"
  executor="${REAL_ARMADA_EXECUTOR:-ours}"
  case "$executor" in
    ours) executor_option=() ;;
    fake) executor_option=(--fake-executor) ;;
    none) executor_option=(--no-executor) ;;
    *) echo "REAL_ARMADA_EXECUTOR must be ours, fake or none" >&2; exit 2 ;;
  esac
  # The groups run in two waves, each group on a bed of its own, side by side within a wave (one after the other
  # they took 18 minutes; each group's tests run one after another, and most of them wait on Armada more than they
  # compute). Which tests make a group: its marker, from REAL_TIER_GROUPS in tests/conftest.py. Each bed finds
  # free ports itself.
  groups=(conformance production_path_runs production_path_connector faults_of_armadas_parts faults)
  # With Armada's fake executor, or none, the production path's pods cannot really run.
  [ "$executor" = ours ] || groups=(conformance faults_of_armadas_parts faults)
  # GROUP@kubernetes: the group's marker on a bed with Kubernetes and Armada's own executor (up --kubernetes), a
  # third judge of the production path beside the embedded server and real Armada with our executor. They are the
  # second wave: eight beds at once (each with its Pulsar, Postgres and Armada) overloaded a 2-core machine until
  # tests waiting on pods passed their deadlines; in two waves the tier takes about as long.
  kubernetes_groups=()
  ! "$kubernetes_tier" || kubernetes_groups=(kubernetes@kubernetes production_path_runs@kubernetes production_path_connector@kubernetes)
  beds="$(mktemp -d -t armada-flyte-beds.XXXXXX)"
  cleanups+=("rm -rf $beds")
  # A group's bed by its handle (the state folder `up` printed), without the environment's other beds.
  bed_down() {
    local state
    state="$(sed -n 's/^REAL_ARMADA_STATE=//p' "$1" 2>/dev/null)"
    [ -z "$state" ] || env -u REAL_ARMADA_PORT_BASE REAL_ARMADA_STATE="$state" scripts/real-armada.sh down
  }
  declare -A group_pid
  stop_groups() {
    local pid
    for pid in "${group_pid[@]}"; do kill -TERM -- "-$pid" 2>/dev/null || true; done
    for pid in "${group_pid[@]}"; do wait "$pid" 2>/dev/null || true; done
  }
  cleanups=(stop_groups "${cleanups[@]}")
  failed_groups=()
  # One wave: a bed per group, the groups side by side, their logs, their beds down.
  run_wave() {
    local group pid up_status=0 ups=() options wave_start=$SECONDS
    for group in "$@"; do
      cleanups=("bed_down $beds/$group.env" "${cleanups[@]}")
      options=("${executor_option[@]}")
      [ "${group#*@}" != kubernetes ] || options=(--kubernetes)
      env -u REAL_ARMADA_STATE -u REAL_ARMADA_LOGS -u REAL_ARMADA_PORT_BASE -u KUBECONFIG \
        scripts/real-armada.sh up "${options[@]}" >"$beds/$group.env" &
      ups+=($!)
    done
    for pid in "${ups[@]}"; do wait "$pid" || up_status=1; done
    [ "$up_status" = 0 ] || { echo "real Armada did not come up (its messages are above)" >&2; exit 1; }
    echo "==> real Armada: $* running side by side (each prints when all are done)"
    group_pid=()
    for group in "$@"; do
      # Its own process group; SIGINT back to its default (a background job starts with it ignored).
      (
        unset KUBECONFIG ARMADA_FLYTE_BINOCULARS_URL # only a bed with Kubernetes names them (not the user's own)
        eval "$(cat "$beds/$group.env")"
        # The bed's user and password file: the connector, c0 and the tests' own clients log in with them.
        export ARMADA_URL ARMADA_EXECUTOR_API REAL_ARMADA_LOGS REAL_ARMADA_STATE
        export ARMADA_FLYTE_AUTH_USERNAME ARMADA_FLYTE_AUTH_PASSWORD_FILE
        # A bed with Kubernetes: its admin kubeconfig, and Binoculars (Armada's log service for the cluster).
        [ -z "${KUBECONFIG:-}" ] || export KUBECONFIG ARMADA_FLYTE_BINOCULARS_URL
        executor_kind="$executor"
        [ "${group#*@}" != kubernetes ] || executor_kind=kubernetes
        exec setsid env --default-signal=INT,QUIT .venv/bin/python -m pytest -p no:cacheprovider --durations=15 \
          --armada real --real-armada-executor "$executor_kind" -m "${group%@*}" tests
      ) >"$beds/$group.log" 2>&1 &
      group_pid[$group]=$!
    done
    for group in "$@"; do
      wait "${group_pid[$group]}" || failed_groups+=("$group")
    done
    for group in "$@"; do
      echo "==> real Armada, $group (pytest -m ${group%@*}$([ "${group#*@}" != kubernetes ] || echo ", on a bed with Kubernetes"))"
      cat "$beds/$group.log"
      bed_down "$beds/$group.env" || true
    done
    echo "==> real Armada: $* took $((SECONDS - wave_start)) s (the beds up, then the groups side by side)"
  }
  tier_start=$SECONDS
  run_wave "${groups[@]}"
  [ "${#kubernetes_groups[@]}" -eq 0 ] || run_wave "${kubernetes_groups[@]}"
  echo "==> real Armada: the tier took $((SECONDS - tier_start)) s"
  [ "${#failed_groups[@]}" -eq 0 ] || { echo "real Armada: failed in ${failed_groups[*]}" >&2; exit 1; }
fi
