#!/usr/bin/env bash
# Real Armada (v0.22.7) on 127.0.0.1, one command: PostgreSQL and Redis from Debian, Pulsar
# standalone from Maven Central's jars, Armada's server, scheduler and ingesters built from its Go
# module (scripts/real-armada/build.sh, cached per version), config files of our own
# (scripts/real-armada/configs.sh), the migrations and the queues e2e-test-queue, flyte, conformance.
#
#   set -a; eval "$(scripts/real-armada.sh up)"; set +a      # + our executor (armada-flyte executor)
#   scripts/real-armada.sh up --no-executor | --fake-executor   # Armada only | Armada's simulated executor
#   scripts/real-armada.sh up --kubernetes   # + a Kubernetes cluster (etcd, kube-apiserver, kube-scheduler,
#                                            #   kube-controller-manager), our node agent as its kubelet, and
#                                            #   Armada's own executor and Binoculars on it (scripts/real-armada/kubernetes.sh)
#   scripts/real-armada.sh up --two-clusters # two clusters, one Armada: Armada's executor on Kubernetes with the
#                                            #   arm64 nodes, ours (armada-flyte executor) with the amd64 nodes
#   REAL_ARMADA_STATE=... scripts/real-armada.sh status | down   # the bed `up` printed (its handle)
#   REAL_ARMADA_STATE=... scripts/real-armada.sh stop COMPONENT | start COMPONENT | restart COMPONENT
#
# stop/start/restart act on one part of a running bed in place (a fault and its recovery), with the
# command, config and ports `up` gave it; `start` waits until it is ready again. COMPONENT is one of
# postgres redis pulsar scheduleringester eventingester lookoutingester server scheduler executor, and on a
# bed with --kubernetes etcd kube-apiserver kube-scheduler kube-controller-manager node-agent binoculars
# (and our-executor with --two-clusters).
#
# `up` prints shell assignments on stdout (ARMADA_URL, ARMADA_EXECUTOR_API, REAL_ARMADA_LOGS,
# REAL_ARMADA_STATE, and the bed's credentials: ARMADA_FLYTE_AUTH_USERNAME and
# ARMADA_FLYTE_AUTH_PASSWORD_FILE, a 0600 file, never the password); progress goes to stderr.
# REAL_ARMADA_STATE is the bed's handle: its state folder (data, pid files, logs, the passwords, its base),
# by default a new 0700 folder from mktemp in ${TMPDIR:-/tmp}; the other verbs take it. Ports derive from
# a base (server gRPC base+1, executor API base+2, the rest up to base+17; docs/real-armada.md): `up` finds
# a free one itself (so beds of several checkouts or tests run side by side), or takes
# REAL_ARMADA_PORT_BASE; each base's bed is recorded (~/.cache/armada-flyte/real-armada-beds/), so the
# verbs also find it by REAL_ARMADA_PORT_BASE, and an `up` at that base removes its previous folder.
#
# Safe by default (docs/security.md): Armada's Go components listen on every address, so the public API,
# its REST gateway and the executor API need the bed's basic-auth user and its random password;
# PostgreSQL (scram-sha-256), Redis (requirepass) and Pulsar (broker, web service, bookie) listen on
# 127.0.0.1 only, Postgres and Redis with passwords of their own.
# ARMADA_FLYTE_CMD names the armada-flyte command (default: on PATH, else the repo's .venv).
# REAL_ARMADA_SECRETS_FILE (Kubernetes Secret manifests) is handed to our executor as --secrets-file,
# so pods' Secret references (blob keys, task secrets) resolve; with --kubernetes they are created in the
# cluster's namespaces instead. With --kubernetes `up` also prints KUBECONFIG (the bed's admin) and
# ARMADA_FLYTE_BINOCULARS_URL (Armada's log service for the cluster).
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
repo="$(dirname "$here")"
# shellcheck source=real-armada/configs.sh
. "$here/real-armada/configs.sh"
# shellcheck source=real-armada/kubernetes.sh
. "$here/real-armada/kubernetes.sh"

BASE="${REAL_ARMADA_PORT_BASE:-24150}"
QUEUES=(e2e-test-queue flyte conformance)
WAIT_SECONDS="${REAL_ARMADA_WAIT_SECONDS:-300}" # every wait on a part's readiness: a bound for failures only (seven beds starting at once on 2 cores take minutes)
# Started in this order.
ORDER=(postgres redis pulsar scheduleringester eventingester lookoutingester server scheduler
  etcd kube-apiserver kube-scheduler kube-controller-manager node-agent executor binoculars our-executor)

say() { echo "real-armada: $*" >&2; }
die() { say "$*"; exit 1; }

BED_USER=armada-flyte
bed_index="${ARMADA_FLYTE_CACHE:-${HOME:-/root}/.cache/armada-flyte}/real-armada-beds"
recorded_state() { [ -f "$bed_index/$BASE" ] && cat "$bed_index/$BASE"; }
# Where `up` looks for a free base when none is given: 20000..31900 in steps of 100, below Linux's ephemeral
# ports (32768 up), whose outgoing connections could take a bed's port for a moment.
FREE_BASE_FIRST=20000 FREE_BASE_STEP=100 FREE_BASE_COUNT=120

use_base() { # base: the bed's ports, and the bed recorded for it (unless REAL_ARMADA_STATE names one)
  BASE=$1
  case "$BASE" in '' | *[!0-9]*) die "REAL_ARMADA_PORT_BASE must be a number, got '$BASE'" ;; esac
  [ "$BASE" -ge 1024 ] && [ "$BASE" -le 65500 ] || die "REAL_ARMADA_PORT_BASE must be within 1024..65500, got $BASE"
  ports_from_base "$BASE"
  kube_ports_from_base "$BASE"
  set_state "${REAL_ARMADA_STATE:-$(recorded_state || true)}"
}

set_state() { # folder: the bed's state folder and the paths inside it
  state=$1 logs="$1/logs" pids="$1/pids" commands="$1/commands" auth="$1/auth" kdir="$1/kubernetes"
}

# Which bed: REAL_ARMADA_STATE (what `up` prints; its base is in its `base` file), else the one recorded for
# REAL_ARMADA_PORT_BASE; `up` with neither finds a free base itself (cmd_up).
BASE="${REAL_ARMADA_PORT_BASE:-}"
if [ -z "$BASE" ] && [ -n "${REAL_ARMADA_STATE:-}" ] && [ -f "$REAL_ARMADA_STATE/base" ]; then
  BASE="$(cat "$REAL_ARMADA_STATE/base")"
fi
if [ -n "$BASE" ]; then use_base "$BASE"; else set_state "${REAL_ARMADA_STATE:-}"; fi

usage() { sed -n '2,41p' "$0" | sed 's/^# \{0,1\}//' >&2; }

pid_of() { [ -f "$pids/$1.pid" ] && cat "$pids/$1.pid"; }
is_running() { local pid; pid="$(pid_of "$1")" && [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; }

port_in_use() { ss -ltnH "sport = :$1" 2>/dev/null | grep -q .; }

check_ports_free() {
  local entry name port
  for entry in "server gRPC:$SERVER_GRPC" "scheduler executor API:$EXECUTOR_API" "server HTTP:$SERVER_HTTP" \
    "scheduler HTTP:$SCHEDULER_HTTP" "postgres:$POSTGRES_PORT" "redis:$REDIS_PORT" "pulsar broker:$PULSAR_PORT" \
    "pulsar web:$PULSAR_WEB" "server metrics:$SERVER_METRICS" \
    "scheduler metrics:$SCHEDULER_METRICS" "scheduleringester metrics:$SCHEDULERINGESTER_METRICS" \
    "eventingester metrics:$EVENTINGESTER_METRICS" "lookoutingester metrics:$LOOKOUTINGESTER_METRICS" \
    "lookout (migrations) API:$LOOKOUT_API" "lookout (migrations) metrics:$LOOKOUT_METRICS" \
    "fake executor HTTP:$FAKEEXECUTOR_HTTP" "fake executor metrics:$FAKEEXECUTOR_METRICS" \
    $(if "$with_kubernetes"; then kube_port_entries | tr ' ' '_'; fi); do
    name="${entry%:*}" port="${entry##*:}" name="${name//_/ }"
    if port_in_use "$port"; then
      die "port $port ($name, REAL_ARMADA_PORT_BASE=$BASE + $((port - BASE))) is already in use; pick another REAL_ARMADA_PORT_BASE or stop what holds it"
    fi
  done
}

postgres_bin() { # Debian keeps PostgreSQL's server programs out of PATH
  local dir
  for dir in /usr/lib/postgresql/*/bin; do
    [ -x "$dir/initdb" ] && { echo "$dir"; return 0; }
  done
  command -v initdb >/dev/null && { dirname "$(command -v initdb)"; return 0; }
  return 1
}

ensure_system_packages() {
  local missing=()
  postgres_bin >/dev/null || missing+=(postgresql)
  command -v redis-server >/dev/null || missing+=(redis-server)
  command -v java >/dev/null || missing+=(openjdk-17-jre-headless)
  command -v mvn >/dev/null || missing+=(maven)
  command -v curl >/dev/null || missing+=(curl)
  command -v ss >/dev/null || missing+=(iproute2)
  command -v setpriv >/dev/null || missing+=(util-linux)
  [ ${#missing[@]} -eq 0 ] && return 0
  if [ "$(id -u)" -ne 0 ]; then
    die "missing: ${missing[*]}; install them with: sudo apt-get install ${missing[*]}"
  fi
  say "installing from Debian: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >&2
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
}

executor_command() { # the armada-flyte command that has an `executor` subcommand, or fails saying why
  local cmd="${ARMADA_FLYTE_CMD:-}"
  if [ -z "$cmd" ]; then
    cmd="$(command -v armada-flyte || true)"
    [ -n "$cmd" ] || cmd="$repo/.venv/bin/armada-flyte"
  fi
  [ -x "$cmd" ] || command -v "$cmd" >/dev/null \
    || die "no armada-flyte command ($cmd); run scripts/setup-venv.sh, set ARMADA_FLYTE_CMD, or use --no-executor"
  "$cmd" executor --help >/dev/null 2>&1 \
    || die "'$cmd executor' does not run (an armada-flyte without the executor command?);" \
      "reinstall with scripts/setup-venv.sh, or use --no-executor or --fake-executor"
  echo "$cmd"
}

declare -A COMMANDS RESTARTS LOG_START
STOP_ALL_ON_FAILURE=true # `up` stops what it started when a part fails; starting one part stops nothing
start() { # name, command...: in a session of its own (down ends the whole group), output to its log;
  # the command is kept in the state folder, so `start NAME` runs the same one again later
  local name=$1
  shift
  COMMANDS[$name]="$(printf '%q ' "$@")"
  printf '%s\n' "${COMMANDS[$name]}" >"$commands/$name"
  LOG_START[$name]=$(stat -c %s "$logs/$name.log" 2>/dev/null || echo 0)
  setsid "$@" >>"$logs/$name.log" 2>&1 </dev/null &
  echo $! >"$pids/$name.pid"
}

restarted_after_port_race() { # name: with a base in Linux's ephemeral range an outgoing connection
  # can hold a bed port for a moment; a component that died on "address already in use" gets up to
  # 3 more starts
  local name=$1 tries=${RESTARTS[$1]:-0}
  [ "$tries" -lt 3 ] && grep -qi "address already in use" "$logs/$name.log" 2>/dev/null || return 1
  RESTARTS[$name]=$((tries + 1))
  say "$name: a port was taken for a moment (address already in use); starting it again"
  sleep 1
  eval "start $name ${COMMANDS[$name]}"
}

fail_with_log() { # name, message: the log's end, then the message (last, where a reader of the output looks)
  if [ -f "$logs/$1.log" ]; then
    say "last lines of $logs/$1.log:"
    tail -n 40 "$logs/$1.log" >&2
  fi
  say "$2"
  if "$STOP_ALL_ON_FAILURE"; then
    stop_all
  else # starting one part: stop only that part, the rest of the bed keeps running
    signal_group "$1"
    await_group "$1"
  fi
  exit 1
}

wait_until() { # name, what, seconds, check command...: bounded wait on a condition
  local name=$1 what=$2 seconds=$3
  shift 3
  local deadline=$((SECONDS + seconds))
  until "$@" >/dev/null 2>&1; do
    if [ "$name" != "-" ] && ! is_running "$name" && ! restarted_after_port_race "$name"; then
      fail_with_log "$name" "$name exited while waiting for $what"
    fi
    [ $SECONDS -lt $deadline ] || fail_with_log "$name" "$name: no $what after ${seconds}s"
    sleep 0.3
  done
}

http_ok() { curl -sf -o /dev/null --max-time "${2:-5}" "$1"; }
# Pulsar is ready when its broker is (brokers/ready) and has made public/default (it makes that namespace
# after it reports ready: a scheduler ingester subscribing earlier exits on TopicNotFound). Not brokers/health:
# that check produces and reads through the broker's own client, whose timer then ticks every millisecond for
# the broker's life (about 2 s of CPU a minute, more than the idle broker's all else; docs/real-armada.md).
pulsar_ready() {
  http_ok "http://127.0.0.1:$PULSAR_WEB/admin/v2/brokers/ready" 20 &&
    http_ok "http://127.0.0.1:$PULSAR_WEB/admin/v2/namespaces/public/default"
}
port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

start_postgres() {
  local bin as_postgres=()
  bin="$(postgres_bin)"
  mkdir -p "$state/postgres"
  local pwfile="$state/postgres/initdb-password"
  (umask 077 && printf '%s\n' "$POSTGRES_PASSWORD" >"$pwfile")
  if [ "$(id -u)" -eq 0 ]; then # PostgreSQL refuses to run as root
    id postgres >/dev/null 2>&1 || die "running as root needs a 'postgres' user to run PostgreSQL as (Debian's postgresql package makes it)"
    as_postgres=(setpriv --reuid=postgres --regid=postgres --init-groups --)
    chown -R postgres: "$state/postgres"
  fi
  # Passwords for every connection, over TCP and the socket alike: other local users are refused.
  "${as_postgres[@]}" "$bin/initdb" -D "$state/postgres/data" -U postgres --auth=scram-sha-256 \
    --pwfile="$pwfile" -E UTF8 --no-sync >"$logs/postgres-initdb.log" 2>&1 || fail_with_log postgres-initdb "initdb failed"
  rm -f "$pwfile"
  start postgres "${as_postgres[@]}" "$bin/postgres" -D "$state/postgres/data" -p "$POSTGRES_PORT" \
    -c listen_addresses=127.0.0.1 -c unix_socket_directories="$state/postgres" -c fsync=off \
    -c synchronous_commit=off -c full_page_writes=off -c max_connections=200
  await_ready postgres
  local db
  for db in scheduler lookout; do
    PGPASSFILE="$auth/pgpass" "$bin/createdb" -h 127.0.0.1 -p "$POSTGRES_PORT" -U postgres "$db" 2>>"$logs/postgres.log" \
      || fail_with_log postgres "could not create the $db database"
  done
}

start_redis() {
  mkdir -p "$state/redis"
  start redis redis-server "$state/config/redis.conf"
  await_ready redis
}

start_pulsar() {
  mkdir -p "$state/pulsar"
  local archive
  archive="$(pulsar_class_archive)"
  if [ ! -f "$archive" ]; then
    say "pulsar: recording the classes it loads at start (once per Java version: later starts read them back)"
    launch_pulsar -XX:ArchiveClassesAtExit="$archive.$$"
    await_ready pulsar
    signal_group pulsar
    await_group pulsar
    keep_class_archive "$archive.$$" "$archive"
    rm -rf "$state/pulsar" && mkdir -p "$state/pulsar"
  fi
  if [ -f "$archive" ]; then launch_pulsar -XX:SharedArchiveFile="$archive"; else launch_pulsar; fi
  await_ready pulsar
}

# Pulsar's start is mostly the JVM loading and compiling classes: C1 alone (no C2) and the serial
# collector halve its CPU on 2 cores, and a class-data archive (CDS) of the classes it loads at
# start takes off more (17.5 s of CPU to 3.8 s, healthy after 4 s instead of 11; docs/real-armada.md).
PULSAR_JVM=(-Xms256m -Xmx1g -XX:TieredStopAtLevel=1 -XX:+UseSerialGC -Djava.net.preferIPv4Stack=true)

launch_pulsar() { # extra JVM options...
  # The --add-opens flags are the ones Pulsar's own launcher passes on Java 17.
  start pulsar java "${PULSAR_JVM[@]}" "$@" \
    --add-opens java.base/java.io=ALL-UNNAMED --add-opens java.base/java.util.zip=ALL-UNNAMED \
    --add-opens java.base/sun.net=ALL-UNNAMED --add-opens java.management/sun.management=ALL-UNNAMED \
    --add-opens jdk.management/com.sun.management.internal=ALL-UNNAMED \
    --add-opens java.base/jdk.internal.misc=ALL-UNNAMED --add-opens java.base/java.nio=ALL-UNNAMED \
    --add-opens java.base/java.lang=ALL-UNNAMED --add-opens java.base/jdk.internal.platform=ALL-UNNAMED \
    -Dlog4j2.configurationFile="$state/config/pulsar-log4j2.properties" \
    -cp "$cache/pulsar/lib/*" org.apache.pulsar.PulsarStandaloneStarter \
    --config "$state/config/pulsar-standalone.conf" -nfw -nss \
    --metadata-dir "$state/pulsar/metadata" --bookkeeper-dir "$state/pulsar/bookkeeper"
}

pulsar_class_archive() { # the archive's path for this Java (an archive only fits the JVM that wrote it)
  local java_id
  java_id="$( (readlink -f "$(command -v java)"; java -version 2>&1) | cksum | cut -d' ' -f1)"
  mkdir -p "$cache/pulsar/class-archives"
  echo "$cache/pulsar/class-archives/java-$java_id.jsa"
}

keep_class_archive() { # written, final: kept only if this JVM maps it (a JVM killed while writing leaves it cut short)
  if [ -f "$1" ] && java -Xshare:on -XX:SharedArchiveFile="$1" -cp "$cache/pulsar/lib/*" -version >/dev/null 2>&1; then
    mv -f "$1" "$2"
  else
    say "pulsar: its class archive was not written whole; starting without it"
    rm -f "$1"
  fi
}

migrate() {
  (cd "$cache" && "$cache/bin/scheduler" migrateDatabase --config "$state/config/scheduler.yaml") \
    >"$logs/migrate-scheduler.log" 2>&1 || fail_with_log migrate-scheduler "the scheduler's migrations failed"
  (cd "$cache" && "$cache/bin/lookout" --migrateDatabase --config "$state/config/lookout.yaml") \
    >"$logs/migrate-lookout.log" 2>&1 || fail_with_log migrate-lookout "lookout's migrations failed"
}

# Armada's Go components on one processor each (GOMAXPROCS): a bed runs five of them on a machine of two cores,
# and idle they mostly wake for their Pulsar producers' 10 ms batch timers; with one processor each wake-up
# stays on one thread (an idle scheduler's CPU: a quarter less; docs/real-armada.md).
GO_RUNTIME=(GOMAXPROCS=1)

start_armada() { # each Go component runs from the cache, where config/<component>/ holds its defaults
  local c
  for c in scheduleringester eventingester lookoutingester server; do
    start "$c" env -C "$cache" "${GO_RUNTIME[@]}" "$cache/bin/$c" --config "$state/config/$c.yaml"
  done
  start scheduler env -C "$cache" "${GO_RUNTIME[@]}" "$cache/bin/scheduler" run --config "$state/config/scheduler.yaml"
  for c in server scheduler scheduleringester eventingester lookoutingester; do await_ready "$c"; done
}

as_bed_user() { # curl's arguments...: a call to the REST gateway as the bed's user (the password from a
  # 0600 curl config file, not from curl's command line)
  curl -K "$auth/curl-login" -sf -o /dev/null --max-time 5 "$@"
}

create_queue() { # through the server's REST gateway (CreateQueue is an upsert)
  as_bed_user -X POST -H 'Content-Type: application/json' \
    -d "{\"name\":\"$1\",\"priorityFactor\":1}" "http://127.0.0.1:$SERVER_HTTP/v1/queue"
}

create_queues() {
  local q
  for q in "${QUEUES[@]}"; do
    wait_until server "queue $q created" "$WAIT_SECONDS" create_queue "$q"
  done
  [ -z "${REAL_ARMADA_RETRY_POLICY:-}" ] \
    || wait_until server "retry policy $REAL_ARMADA_RETRY_POLICY created" "$WAIT_SECONDS" create_retry_policy "$REAL_ARMADA_RETRY_POLICY"
}

create_retry_policy() { # runs lost with their executor (lease expired) are run again, twice at most
  as_bed_user -X POST -H 'Content-Type: application/json' -d "{\"name\":\"$1\",\"retryLimit\":2,
\"defaultAction\":\"RETRY_ACTION_FAIL\",\"rules\":[{\"action\":\"RETRY_ACTION_RETRY\",\"onCategory\":\"internal\",
\"onSubcategory\":\"lease-expired\"}]}" "http://127.0.0.1:$SERVER_HTTP/v1/retry-policy"
}

start_executor() { # $1: ours | fake
  if [ "$1" = fake ]; then
    start executor env -C "$cache" "${GO_RUNTIME[@]}" "$cache/bin/fakeexecutor" --config "$state/config/fakeexecutor.yaml"
  else
    local secrets=()
    [ -z "${REAL_ARMADA_SECRETS_FILE:-}" ] || secrets=(--secrets-file "$REAL_ARMADA_SECRETS_FILE")
    start executor "$executor_cmd" executor --scheduler "127.0.0.1:$EXECUTOR_API" --auth-username "$BED_USER" \
      --auth-password-file "$auth/armada-password" "${secrets[@]}"
  fi
  await_ready executor
}

connected_to() { ss -tnH state established "dport = :$1" 2>/dev/null | grep -q .; }
# Ours says so once the scheduler has taken a lease request (with its credentials), not at the first TCP connection.
logged_since_start() { tail -c "+$((${LOG_START[$1]:-0} + 1))" "$logs/$1.log" 2>/dev/null | grep -q "$2"; }
# Armada's executor: once its startup is complete (/health) and it holds a connection to the executor API.
armada_executor_ready() {
  http_ok "http://127.0.0.1:$ARMADA_EXECUTOR_HTTP/health" &&
    ss -tnpH state established "dport = :$EXECUTOR_API" 2>/dev/null | grep -q "pid=$(pid_of executor),"
}
executor_ready() {
  if grep -q fakeexecutor "$commands/executor"; then connected_to "$EXECUTOR_API"
  elif grep -q "/bin/executor " "$commands/executor"; then armada_executor_ready
  else logged_since_start executor "connected to the scheduler"; fi
}

await_ready() { # name: wait (bounded) until the component serves: the one readiness check per component
  case "$1" in
    postgres) wait_until postgres "pg_isready" "$WAIT_SECONDS" "$(postgres_bin)/pg_isready" -q -h 127.0.0.1 -p "$POSTGRES_PORT" ;;
    redis) wait_until redis "port $REDIS_PORT" "$WAIT_SECONDS" port_open "$REDIS_PORT" ;;
    pulsar) wait_until pulsar "ready broker (/admin/v2/brokers/ready) and namespace public/default" \
      "$WAIT_SECONDS" pulsar_ready ;;
    server) wait_until server "/health on $SERVER_HTTP" "$WAIT_SECONDS" http_ok "http://127.0.0.1:$SERVER_HTTP/health" ;;
    scheduler) wait_until scheduler "/health on $SCHEDULER_HTTP" "$WAIT_SECONDS" \
      http_ok "http://127.0.0.1:$SCHEDULER_HTTP/health" ;;
    scheduleringester) wait_until scheduleringester "metrics port" "$WAIT_SECONDS" port_open "$SCHEDULERINGESTER_METRICS" ;;
    eventingester) wait_until eventingester "metrics port" "$WAIT_SECONDS" port_open "$EVENTINGESTER_METRICS" ;;
    lookoutingester) wait_until lookoutingester "metrics port" "$WAIT_SECONDS" port_open "$LOOKOUTINGESTER_METRICS" ;;
    executor) wait_until executor "connection to the executor API" "$WAIT_SECONDS" executor_ready ;;
    *) await_kube_part "$1" ;;
  esac
}

signal_group() { # name: ask the component's process group to stop (PostgreSQL: INT, its fast shutdown)
  local pid signal=TERM
  pid="$(pid_of "$1")" || return 0
  [ "$1" != postgres ] || signal=INT
  kill "-$signal" -- "-$pid" 2>/dev/null || true
}

await_group() { # name: wait (bounded) for the group to be gone, then KILL what is left
  local pid deadline=$((SECONDS + 20))
  pid="$(pid_of "$1")" || return 0
  while kill -0 -- "-$pid" 2>/dev/null && [ $SECONDS -lt $deadline ]; do sleep 0.2; done
  if kill -0 -- "-$pid" 2>/dev/null; then
    say "$1 (pid $pid) still running 20s after it was asked to stop: killing it"
    kill -KILL -- "-$pid" 2>/dev/null || true
  fi
  rm -f "$pids/$1.pid"
}

STOPPED_LAST=(kube-apiserver etcd postgres)
stop_all() { # Armada, its executor, Pulsar, Redis and Kubernetes' clients together, then the stores in order: the
  # API server before etcd (with etcd gone first it waits on it, past the 20 s bound), then PostgreSQL
  local name
  for name in "${ORDER[@]}"; do [[ " ${STOPPED_LAST[*]} " == *" $name "* ]] || signal_group "$name"; done
  for name in "${ORDER[@]}"; do [[ " ${STOPPED_LAST[*]} " == *" $name "* ]] || await_group "$name"; done
  for name in "${STOPPED_LAST[@]}"; do
    signal_group "$name"
    await_group "$name"
  done
}

with_kubernetes=false
cmd_up() {
  local executor=ours
  while [ $# -gt 0 ]; do
    case "$1" in
      --no-executor) executor=none ;;
      --fake-executor) executor=fake ;;
      --kubernetes) executor=kubernetes with_kubernetes=true ;;
      --two-clusters) executor=kubernetes with_kubernetes=true two_clusters=true ;;
      *) usage; die "unknown option for up: $1" ;;
    esac
    shift
  done
  if [ -z "$BASE" ]; then
    use_base "$(reserve_free_base)"
    trap 'rm -f "$bed_index/$BASE.up"' EXIT
  fi
  local name
  for name in "${ORDER[@]}"; do
    [ -z "$state" ] || ! is_running "$name" \
      || die "a bed is already running in $state ($name, pid $(pid_of "$name")); run: $0 down"
  done
  executor_cmd=""
  if [ "$executor" = ours ] || [ "$executor" = kubernetes ]; then
    executor_cmd="$(executor_command)"
    # Its executor-API stubs are generated once from Armada's Go module (cached).
    "$here/build-executor-stubs.sh" >/dev/null || die "scripts/build-executor-stubs.sh failed (its output is above)"
  fi
  if [ -n "${REAL_ARMADA_SECRETS_FILE:-}" ] && [ ! -r "$REAL_ARMADA_SECRETS_FILE" ]; then
    die "REAL_ARMADA_SECRETS_FILE=$REAL_ARMADA_SECRETS_FILE is not a readable file"
  fi
  check_given_state
  check_ports_free
  ensure_system_packages
  local t0=$SECONDS
  cache="$("$here/real-armada/build.sh")" || die "the build failed (its log is named above)"
  if "$with_kubernetes"; then
    command -v kubectl >/dev/null || die "no kubectl (Debian's kubernetes-client; scripts/install-test-parts.sh installs it)"
    command -v openssl >/dev/null || die "no openssl (Debian's openssl) to make the cluster's certificates"
    kcache="$("$here/real-armada/kubernetes-build.sh")" || die "the Kubernetes build failed (its log is named above)"
  fi
  make_state
  make_secrets
  ! "$with_kubernetes" || make_kube_credentials
  trap 'say "interrupted"; stop_all; exit 130' INT TERM
  write_configs
  ! "$with_kubernetes" || write_kube_configs
  say "starting in $state (ports $((BASE + 1))..$((BASE + BED_PORT_COUNT)))"
  start_postgres
  start_redis
  start_pulsar
  say "postgres, redis, pulsar up after $((SECONDS - t0))s; migrating"
  migrate
  start_armada
  create_queues
  if "$with_kubernetes"; then
    start_kubernetes
    say "Kubernetes and its node agent up after $((SECONDS - t0))s"
    start_armada_on_kubernetes
  elif [ "$executor" != none ]; then
    start_executor "$executor"
  fi
  trap - INT TERM
  say "up in $((SECONDS - t0))s; stop with: $0 down"
  print_bed
}

print_bed() { # the assignments a client of the bed needs: its addresses, folders and credentials (a file)
  printf 'ARMADA_URL=127.0.0.1:%s\nARMADA_EXECUTOR_API=127.0.0.1:%s\nREAL_ARMADA_LOGS=%q\nREAL_ARMADA_STATE=%q\n' \
    "$SERVER_GRPC" "$EXECUTOR_API" "$logs" "$state"
  printf 'ARMADA_FLYTE_AUTH_USERNAME=%s\nARMADA_FLYTE_AUTH_PASSWORD_FILE=%q\n' "$BED_USER" "$auth/armada-password"
  [ ! -d "$kdir" ] || print_kube_bed
}

check_given_state() { # REAL_ARMADA_STATE, when given, is a folder of ours (another user may have made a link)
  [ -n "${REAL_ARMADA_STATE:-}" ] || return 0
  [ ! -L "$state" ] || die "REAL_ARMADA_STATE=$state is a symbolic link: name a folder of your own"
  [ ! -e "$state" ] || [ -O "$state" ] || die "REAL_ARMADA_STATE=$state belongs to another user: name a folder of your own"
}

make_state() { # REAL_ARMADA_STATE (emptied) or a new folder from mktemp; 0700, recorded for the base
  if [ -n "${REAL_ARMADA_STATE:-}" ]; then
    check_given_state
    if [ -e "$state" ]; then
      chmod -R u+w "$state" 2>/dev/null || true
      rm -rf "$state"
    fi
    mkdir -p "$(dirname "$state")"
    mkdir -m 700 "$state" || die "could not make REAL_ARMADA_STATE=$state (did something else make it meanwhile?)"
  else
    forget_recorded_bed
    set_state "$(mktemp -d "${TMPDIR:-/tmp}/armada-flyte-real-armada-$BASE.XXXXXX")"
  fi
  if [ "$(id -u)" -eq 0 ]; then # PostgreSQL's user (and no one else) may pass through to its data folder
    chgrp postgres "$state" && chmod 710 "$state"
  else
    chmod 700 "$state"
  fi
  mkdir -p "$logs" "$pids" "$commands"
  printf '%s\n' "$BASE" >"$state/base"
  mkdir -p -m 700 "$bed_index"
  printf '%s\n' "$state" >"$bed_index/$BASE"
}

reserve_free_base() { # a base no bed holds, whose ports are all free; kept for this `up` until it ends
  mkdir -p -m 700 "$bed_index"
  exec 8>"$bed_index/.lock"
  flock 8 # one `up` at a time chooses, so two started together take different bases
  local n candidate
  for n in $(shuf -i "0-$((FREE_BASE_COUNT - 1))"); do
    candidate=$((FREE_BASE_FIRST + n * FREE_BASE_STEP))
    base_taken "$candidate" && continue
    printf '%s\n' "$$" >"$bed_index/$candidate.up" # the reservation: this `up` (its pid), while it runs
    echo "$candidate"
    return 0
  done
  die "no free base among $FREE_BASE_COUNT from $FREE_BASE_FIRST: stop some beds, or give REAL_ARMADA_PORT_BASE"
}

base_taken() { # base: held by an `up` still running, by a recorded bed still running, or any of its ports in use
  local reservation="$bed_index/$1.up" previous offset
  [ -f "$reservation" ] && kill -0 "$(cat "$reservation")" 2>/dev/null && return 0
  previous="$(cat "$bed_index/$1" 2>/dev/null || true)"
  [ -n "$previous" ] && compgen -G "$previous/pids/*.pid" >/dev/null && return 0
  for offset in $(seq 1 "$BED_PORT_COUNT"); do port_in_use $(($1 + offset)) && return 0; done
  return 1
}

forget_recorded_bed() { # the previous bed of this base: its state folder goes (its logs were kept until now)
  local previous
  previous="$(recorded_state || true)"
  if [ -n "$previous" ] && [ -d "$previous" ] && [ ! -L "$previous" ] && [ -O "$previous" ]; then
    chmod -R u+w "$previous" 2>/dev/null || true
    rm -rf "$previous"
  fi
  rm -f "$bed_index/$BASE"
}

new_secret() { head -c 24 /dev/urandom | base64 | tr -d '+/=\n'; }

make_secrets() { # random passwords for this bed, in 0600 files of $auth; the configs get them too
  ARMADA_PASSWORD="$(new_secret)" POSTGRES_PASSWORD="$(new_secret)" REDIS_PASSWORD="$(new_secret)"
  mkdir -m 700 "$auth"
  (
    umask 077
    printf '%s\n' "$ARMADA_PASSWORD" >"$auth/armada-password"
    printf '127.0.0.1:%s:*:postgres:%s\n' "$POSTGRES_PORT" "$POSTGRES_PASSWORD" >"$auth/pgpass"
    printf 'user = "%s:%s"\n' "$BED_USER" "$ARMADA_PASSWORD" >"$auth/curl-login"
  )
}

cmd_down() {
  [ -n "$state" ] && [ -d "$pids" ] || { say "nothing to stop $(where_the_bed_is)"; return 0; }
  stop_all
  local left
  left="$(ls "$pids" 2>/dev/null || true)"
  [ -z "$left" ] || die "still recorded as running: $left"
  say "stopped (logs kept in $logs)"
}

cmd_status() {
  local name any=1
  for name in "${ORDER[@]}"; do
    if [ -f "$pids/$name.pid" ]; then
      any=0
      if is_running "$name"; then
        printf '%-18s running  pid %s\n' "$name" "$(pid_of "$name")"
      else
        printf '%-18s EXITED   log %s\n' "$name" "$logs/$name.log"
      fi
    fi
  done
  [ $any -eq 0 ] || { echo "no bed $(where_the_bed_is)"; return 1; }
  print_bed
}

where_the_bed_is() { # for messages: the state folder, or the base no bed is recorded for
  if [ -n "$state" ]; then
    echo "in $state (no bed there, or one up without it)"
  elif [ -n "$BASE" ]; then
    echo "for REAL_ARMADA_PORT_BASE=$BASE (no bed is recorded in $bed_index; REAL_ARMADA_STATE names one)"
  else
    echo "(none is named: set REAL_ARMADA_STATE to the folder \`up\` printed, or REAL_ARMADA_PORT_BASE to its base)"
  fi
}

component_named() { # name: fails with the components' names unless it is one of the bed's
  local name
  for name in "${ORDER[@]}"; do [ "$name" != "${1:-}" ] || return 0; done
  die "unknown component '${1:-}': use one of ${ORDER[*]}"
}

cmd_stop() { # name: stop one part of the running bed in place (its pid file goes; its command stays)
  component_named "$1"
  [ -n "$state" ] && [ -f "$commands/$1" ] || die "no $1 was started $(where_the_bed_is)"
  is_running "$1" || { say "$1 is not running in $state"; rm -f "$pids/$1.pid"; return 0; }
  signal_group "$1"
  await_group "$1"
  say "stopped $1"
}

cmd_start() { # name: start one stopped part again with the command `up` gave it, and wait until it serves
  component_named "$1"
  [ -n "$state" ] && [ -f "$commands/$1" ] || die "no $1 was started $(where_the_bed_is)"
  is_running "$1" && die "$1 is already running in $state (pid $(pid_of "$1")); stop it first"
  STOP_ALL_ON_FAILURE=false
  COMMANDS[$1]="$(cat "$commands/$1")"
  eval "start $1 ${COMMANDS[$1]}"
  await_ready "$1"
  say "started $1 (pid $(pid_of "$1"))"
}

case "${1:-}" in
  up) shift; cmd_up "$@" ;;
  down) cmd_down ;;
  status) cmd_status ;;
  stop) cmd_stop "${2:-}" ;;
  start) cmd_start "${2:-}" ;;
  restart) cmd_stop "${2:-}"; cmd_start "${2:-}" ;;
  -h | --help) usage ;;
  *) usage; die "unknown command '${1:-}': use up, down, status, stop, start or restart" ;;
esac
