#!/usr/bin/env bash
# The README's test command (scripts/test.sh, arguments passed through to pytest) with CPU hogs
# beside it (`stress-ng --cpu 2`), as on a machine busy with other builds. The tests wait on
# conditions, not fixed times, so they must pass here too.
#
#   scripts/test-under-load.sh                                   # the whole suite, under load
#   scripts/test-under-load.sh tests/embedded/test_ingress.py -q  # a selection
#
# Environment:
#   LOAD_CPUS          stress-ng CPU workers (default 2)
#   LOAD_MAX_SECONDS   the hogs end on their own after this long even if this script is killed
#                      (default 10800)
#
# The hogs are stopped at the end whatever happens (pass, failure, Ctrl-C). The last line gives
# test.sh's exit status and the elapsed time; the exit status is test.sh's.
set -euo pipefail
cd "$(dirname "$0")/.."

cpus="${LOAD_CPUS:-2}"
command -v stress-ng >/dev/null 2>&1 || scripts/install-test-parts.sh

hogs=""
hog_log=""
stop_hogs() {
  rm -f "$hog_log"
  [ -n "$hogs" ] || return 0
  kill -TERM -- "-$hogs" 2>/dev/null || return 0
  for _ in $(seq 1 50); do kill -0 -- "-$hogs" 2>/dev/null || return 0; sleep 0.1; done
  kill -KILL -- "-$hogs" 2>/dev/null || true
}
suite=""
stop_suite() { # the whole suite's process group (pytest, pip, builds); test.sh runs its cleanups on TERM
  [ -n "$suite" ] || return 0
  kill -TERM -- "-$suite" 2>/dev/null || return 0
  wait "$suite" 2>/dev/null || true
}
trap 'stop_suite; stop_hogs' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# A session of their own, so one signal to the group stops stress-ng and every worker it forked.
hog_log="$(mktemp "${TMPDIR:-/tmp}/test-under-load.XXXXXX")"
setsid stress-ng --cpu "$cpus" --timeout "${LOAD_MAX_SECONDS:-10800}" --quiet </dev/null >"$hog_log" 2>&1 &
hogs=$!
# Wait (bounded) until the workers are there, so the first test already runs under load.
deadline=$((SECONDS + 30))
until [ "$(pgrep -c -g "$hogs" || true)" -gt "$cpus" ]; do
  kill -0 "$hogs" 2>/dev/null || { echo "test-under-load: stress-ng exited at start:" >&2; cat "$hog_log" >&2; exit 1; }
  [ "$SECONDS" -lt "$deadline" ] || { echo "test-under-load: stress-ng started no $cpus workers in 30 s" >&2; exit 1; }
  sleep 0.1
done
echo "test-under-load: $cpus stress-ng CPU hogs running (process group $hogs)" >&2

started=$SECONDS
status=0
# In a process group of its own, in the background and waited for, so a signal to this script is
# handled at once (a foreground child would defer the trap until it ended) and stops every process
# of the suite as well as the hogs. A background command starts with SIGINT and SIGQUIT ignored,
# which the Ctrl-C tests would inherit: env puts them back to their defaults.
setsid env --default-signal=INT,QUIT scripts/test.sh "$@" &
suite=$!
wait "$suite" || status=$?
suite=""
elapsed=$((SECONDS - started))
still="yes"
kill -0 "$hogs" 2>/dev/null || still="no (they ended early: LOAD_MAX_SECONDS?)"
echo "test-under-load: scripts/test.sh exited $status after $((elapsed / 60))m $((elapsed % 60))s" \
  "beside $cpus CPU hogs (still running at the end: $still)" >&2
exit "$status"
