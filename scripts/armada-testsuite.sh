#!/usr/bin/env bash
# Run Armada's own testsuite YAML cases, unchanged, against the embedded
# Armada-compatible server (`armada-flyte dev`), or against ARMADA_URL.
#
#   scripts/armada-testsuite.sh                    # every case folder, one after another
#   scripts/armada-testsuite.sh basic queue        # just these folders
#   scripts/armada-testsuite.sh basic/submit_1x1   # one case (folder/name, no .yaml)
#
# Environment:
#   ARMADA_URL          host:port of a running server; unset: start `armada-flyte dev`
#                       (then KUBECONFIG must name that cluster, for the node/* cases)
#   ARMADA_FLYTE_AUTH_USERNAME, ARMADA_FLYTE_AUTH_PASSWORD_FILE  basic auth for ARMADA_URL (a
#                       real-Armada bed prints them); the config file armadactl and the
#                       testsuite read gets the password (mode 0600), never a command line
#   ARMADA_TESTSUITE_CLUSTER  cluster file for the started server
#                       (default: scripts/armada-testsuite-cluster.yaml)
#   ARMADA_FLYTE_CMD    command that runs the CLI (default: armada-flyte on PATH, else
#                       .venv/bin/armada-flyte of this checkout)
#   OUT_DIR             where logs and JUnit reports go (default: a new temp dir)
#   ARMADA_TESTSUITE_START_TIMEOUT  seconds the started server may take to say it is ready
#                       (default 120: a busy machine can be slow to start it)
#   PER_CASE=1          run each case by itself instead of a folder at a time
#                       (the testsuite runs every case of one --tests pattern in parallel)
#   SKIP_CASES="a/b c/d"  leave these cases out (e.g. the two stress-ng load
#                       cases on a busy shared machine)
#
# Every case runs by default. The two stress-ng load cases (performance/submit_load_*)
# run 1000 pods x 20 s together: the cluster file (armada-testsuite-cluster.yaml)
# bounds how many run at once by node cpu and memory, and its cpuShares runs their
# 50m pods at nice 13, so the rest of the machine keeps its CPU; on 2 cores the
# performance folder takes about 4.5 minutes. The OOM cases are safe: the process
# executor's shim kills a container over its memory limit, /dev/shm included, within
# milliseconds (docs/embedded-server.md).
#
# The tools come from scripts/build-armada-tools.sh (cached after the first build).
# Every case of Armada's testsuite submits to the queue e2e-test-queue, which its
# own CI creates beforehand; the embedded server is started with it as its queue.
# Exit status: 0 when every case passed, 1 otherwise. The last line reads
# "N passed, N failed".
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/.." && pwd)"

eval "$("$here/build-armada-tools.sh" --env)"
testsuite="$ARMADA_TOOLS_BIN/testsuite"

out="${OUT_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/armada-testsuite.XXXXXX")}"
mkdir -p "$out"
echo "armada-testsuite: Armada $ARMADA_VERSION tools, output in $out" >&2

server_pid=""
stop_server() {
  if [ -n "$server_pid" ] && kill -0 "$server_pid" 2>/dev/null; then
    kill -TERM "$server_pid" 2>/dev/null || true
    for _ in $(seq 1 50); do kill -0 "$server_pid" 2>/dev/null || break; sleep 0.2; done
    kill -KILL "$server_pid" 2>/dev/null || true
  fi
}
trap stop_server EXIT

start_timeout="${ARMADA_TESTSUITE_START_TIMEOUT:-120}"

# server_failed REASON: say why the started server is of no use, with the end of its log, and stop.
server_failed() {
  echo "armada-testsuite: the embedded server $1; the end of $out/server.log:" >&2
  tail -n 40 "$out/server.log" >&2 2>/dev/null || echo "(no log was written)" >&2
  exit 1
}

# wait_for_server_log REGEX WHAT: return once a line of the server's log matches REGEX; fail if the
# server exits first or start_timeout seconds pass.
wait_for_server_log() {
  local deadline=$((SECONDS + start_timeout))
  until grep -q -- "$1" "$out/server.log" 2>/dev/null; do
    kill -0 "$server_pid" 2>/dev/null || server_failed "exited before printing $2"
    [ "$SECONDS" -lt "$deadline" ] \
      || server_failed "did not print $2 within ${start_timeout} s (ARMADA_TESTSUITE_START_TIMEOUT)"
    sleep 0.1
  done
}

# server_log_value SED_SCRIPT WHAT: the first value SED_SCRIPT prints from the log the server has written.
server_log_value() {
  local value
  value="$(sed -n "$1" "$out/server.log" | head -n1)"
  [ -n "$value" ] || server_failed "did not print $2"
  printf '%s' "$value"
}

url="${ARMADA_URL:-}"
if [ -z "$url" ]; then
  if [ -n "${ARMADA_FLYTE_CMD:-}" ]; then
    read -r -a cli <<<"$ARMADA_FLYTE_CMD"
  elif command -v armada-flyte >/dev/null 2>&1; then
    cli=(armada-flyte)
  elif [ -x "$repo/.venv/bin/armada-flyte" ]; then
    cli=("$repo/.venv/bin/armada-flyte")
  else
    echo "armada-testsuite: no armada-flyte CLI found; run scripts/setup-venv.sh or set ARMADA_FLYTE_CMD" >&2
    exit 1
  fi
  # The cluster file lists the images the cases use (the nodes' image catalogue) and adds the node/*
  # cases' node-ops node; the testsuite reads nodes through the kubeconfig of the server's Kubernetes API.
  export KUBECONFIG="$out/kubeconfig"
  "${cli[@]}" dev --ephemeral --port 0 --no-blob-store --queue e2e-test-queue \
    --cluster "${ARMADA_TESTSUITE_CLUSTER:-$here/armada-testsuite-cluster.yaml}" --kubeconfig "$KUBECONFIG" \
    >"$out/server.log" 2>&1 &
  server_pid=$!
  # The server prints its addresses in one block, flushed with its last line: wait for that line.
  # On a busy machine the log may not even exist yet when we first look.
  wait_for_server_log "^Press Ctrl-C to stop" "its ready line (\"Press Ctrl-C to stop.\")"
  url="$(server_log_value 's/^Armada-compatible server listening on \([^ ]*\).*/\1/p' "its address")"
  echo "armada-testsuite: embedded server (pid $server_pid) on $url" >&2
  # The testsuite GETs every ingress host it is told of at ARMADA_EXECUTOR_INGRESS_URL:PORT with the
  # host as Host header (Armada's CI: kind's ingress controller on localhost:5001); here the
  # embedded server's ingress controller routes them.
  ingress="$(server_log_value 's|^ingress controller on http://\([^ ]*\).*|\1|p' "its ingress controller's address")"
  export ARMADA_EXECUTOR_INGRESS_URL="http://${ingress%:*}" ARMADA_EXECUTOR_INGRESS_PORT="${ingress##*:}"
fi

# armadactl/testsuite dial with TLS unless told otherwise or the URL names "localhost".
config="$out/armadactl.yaml"
(
  umask 077
  printf 'armadaUrl: %s\nforceNoTls: true\n' "$url"
  if [ -n "${ARMADA_FLYTE_AUTH_USERNAME:-}" ] && [ -n "${ARMADA_FLYTE_AUTH_PASSWORD_FILE:-}" ]; then
    printf 'basicAuth:\n  username: "%s"\n  password: "%s"\n' "$ARMADA_FLYTE_AUTH_USERNAME" \
      "$(head -n1 "$ARMADA_FLYTE_AUTH_PASSWORD_FILE")"
  fi
) >"$config"

read -r -a skip_cases <<<"${SKIP_CASES:-}"
is_skipped() {
  local c
  for c in "${skip_cases[@]}"; do [ "$c" = "$1" ] && return 0; done
  return 1
}

# Armada's own CI runs the node cases one at a time (magefiles/ci.go TestSuite): each cancels or
# preempts every job of e2e-test-queue on the one node-ops node, the other case's jobs too.
ONE_AT_A_TIME_FOLDERS=(node)
one_at_a_time() {
  local d
  for d in "${ONE_AT_A_TIME_FOLDERS[@]}"; do [ "$d" = "$1" ] && return 0; done
  return 1
}

# The testsuite takes a comma-separated list of globs; a folder with a skipped
# case becomes the list of its other cases.
case_list() {
  local dir="$1" f name list=""
  for f in "$ARMADA_TESTCASES/$dir"/*.yaml; do
    [ -e "$f" ] || continue
    name="$dir/$(basename "$f" .yaml)"
    if is_skipped "$name"; then
      echo "armada-testsuite: skipping $name (SKIP_CASES)" >&2
      continue
    fi
    list="${list:+$list,}$f"
  done
  printf '%s' "$list"
}

skipped=0
targets=("$@")
if [ "${#targets[@]}" -eq 0 ]; then
  for dir in "$ARMADA_TESTCASES"/*/; do
    targets+=("$(basename "$dir")")
  done
fi

patterns=()
for target in "${targets[@]}"; do
  if [ -d "$ARMADA_TESTCASES/$target" ]; then
    if [ "${PER_CASE:-0}" = 1 ] || one_at_a_time "$target"; then
      for f in "$ARMADA_TESTCASES/$target"/*.yaml; do
        [ -e "$f" ] || continue
        name="$target/$(basename "$f" .yaml)"
        if is_skipped "$name"; then
          echo "armada-testsuite: skipping $name (SKIP_CASES)" >&2
          skipped=$((skipped + 1))
          continue
        fi
        patterns+=("$name")
      done
    else
      patterns+=("$target")
    fi
  elif [ -f "$ARMADA_TESTCASES/$target.yaml" ]; then
    patterns+=("$target")
  else
    echo "armada-testsuite: no case folder or case named $target under $ARMADA_TESTCASES" >&2
    exit 2
  fi
done

passed=0
failed=0
for p in "${patterns[@]}"; do
  label="${p//\//__}"
  if [ -d "$ARMADA_TESTCASES/$p" ]; then
    glob="$(case_list "$p")"
    n_all="$(ls "$ARMADA_TESTCASES/$p"/*.yaml | wc -l)"
    n_run="$(printf '%s' "$glob" | tr ',' '\n' | grep -c . || true)"
    skipped=$((skipped + n_all - n_run))
    if [ -z "$glob" ]; then
      continue
    fi
  else
    glob="$ARMADA_TESTCASES/$p.yaml"
  fi
  echo "armada-testsuite: running $p" >&2
  t0=$(date +%s)
  set +e
  "$testsuite" --config "$config" test --tests "$glob" --junit "$out/$label.junit.xml" >"$out/$label.log" 2>&1
  set -e
  t1=$(date +%s)
  # The testsuite prints "Success: N" and "Failure: N" after its summary table.
  s="$(sed -n 's/^Success: \([0-9]*\)$/\1/p' "$out/$label.log" | tail -n1)"
  f="$(sed -n 's/^Failure: \([0-9]*\)$/\1/p' "$out/$label.log" | tail -n1)"
  if [ -z "$s" ] || [ -z "$f" ]; then
    echo "armada-testsuite: $p did not run to its summary ($((t1 - t0))s); see $out/$label.log" >&2
    tail -n 5 "$out/$label.log" >&2
    failed=$((failed + $(printf '%s' "$glob" | tr ',' '\n' | grep -c . || true)))
    continue
  fi
  sed -n '/^======= SUMMARY =======$/,/^Failure:/p' "$out/$label.log" | sed '1d' >&2
  echo "armada-testsuite: $p: $s passed, $f failed in $((t1 - t0))s" >&2
  passed=$((passed + s))
  failed=$((failed + f))
done

echo "armada-testsuite: logs and JUnit reports in $out" >&2
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
