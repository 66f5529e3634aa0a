#!/usr/bin/env bash
# Build (once per version) what scripts/real-armada.sh runs: Armada's Go components from its
# Go module, Armada's default config files beside them (the components read
# config/<component>/config.yaml relative to their working directory), and Pulsar's broker
# jars from Maven Central. Prints the cache directory on stdout; progress on stderr.
#
# Cache: ${ARMADA_FLYTE_CACHE:-~/.cache/armada-flyte}/real-armada/<version>/
#   bin/{server,scheduler,scheduleringester,eventingester,lookoutingester,lookout,fakeexecutor}
#   config/                          (Armada's default configs, copied from the module, never committed)
#   pulsar/lib/*.jar                  (org.apache.pulsar:pulsar-broker:$PULSAR_VERSION and deps)
#   BUILD-INFO                        (written last: its presence means the cache is complete)
# Build logs: <cache>/build-logs/ (kept on failure; the error names the log).
set -euo pipefail
# shellcheck source=scripts/lib/go.sh
. "$(dirname "$0")/../lib/go.sh"

ARMADA_MODULE=github.com/armadaproject/armada
ARMADA_VERSION="${ARMADA_VERSION:-v0.22.7}"
PULSAR_VERSION="${PULSAR_VERSION:-4.0.7}"
COMPONENTS=(server scheduler scheduleringester eventingester lookoutingester lookout fakeexecutor)

say() { echo "real-armada build: $*" >&2; }
die() { say "$*"; exit 1; }

root="${ARMADA_FLYTE_CACHE:-${HOME:-/root}/.cache/armada-flyte}/real-armada"
dest="$root/$ARMADA_VERSION"
logs="$root/build-logs"

is_complete() { [ -f "$dest/BUILD-INFO" ]; }
if is_complete; then
  echo "$dest"
  exit 0
fi

find_go || die "no Go toolchain: install Go 1.24+ (https://go.dev/dl, or Debian's golang-go) and put it on PATH"
command -v java >/dev/null || die "no java: apt-get install openjdk-17-jre-headless"
command -v mvn >/dev/null || die "no mvn (to fetch Pulsar's jars from Maven Central): apt-get install maven"

mkdir -p "$root" "$logs"
exec 9>"$root/.lock-$ARMADA_VERSION"
command -v flock >/dev/null && flock 9
if is_complete; then
  echo "$dest"
  exit 0
fi

work="$(mktemp -d "${TMPDIR:-/tmp}/real-armada-build.XXXXXX")"
stage="$(mktemp -d "$root/.stage-$ARMADA_VERSION.XXXXXX")"
cleanup() { chmod -R u+w "$work" 2>/dev/null || true; rm -rf "$work" "$stage"; }
trap cleanup EXIT

start=$(date +%s)

fetch_pulsar() {  # Maven resolves the broker and its dependencies into $stage/pulsar/lib
  mkdir -p "$work/pulsar-pom" "$stage/pulsar/lib"
  cat >"$work/pulsar-pom/pom.xml" <<POM
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>armada-flyte</groupId><artifactId>real-armada-pulsar</artifactId><version>1</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency>
      <groupId>org.apache.pulsar</groupId><artifactId>pulsar-broker</artifactId>
      <version>$PULSAR_VERSION</version>
    </dependency>
  </dependencies>
</project>
POM
  (cd "$work/pulsar-pom" && mvn -B -q dependency:copy-dependencies \
    -DincludeScope=runtime -DoutputDirectory="$stage/pulsar/lib")
}

build_armada() {  # go build the components from a writable copy of the module
  download_module "$ARMADA_MODULE@$ARMADA_VERSION" "$work"
  [ -f "$GO_MODULE_DIR/go.mod" ] || { printf '%s\n' "$GO_MODULE_INFO"; return 1; }
  # Armada's go.mod has replace directives, honoured only in the main module: build a copy.
  cp -R "$GO_MODULE_DIR" "$work/armada"
  chmod -R u+w "$work/armada"
  mkdir -p "$stage/bin"
  # Every default config (the fake executor reads config/executor/, logging config/logging.yaml).
  cp -R "$work/armada/config" "$stage/config"
  local c pkgs=()
  for c in "${COMPONENTS[@]}"; do pkgs+=("./cmd/$c"); done
  (cd "$work/armada" && GOWORK=off GOFLAGS=-mod=mod CGO_ENABLED=0 \
    nice "$GO" build -trimpath -ldflags="-s -w" -o "$stage/bin/" "${pkgs[@]}")
  # Each binary keeps its command's name; check they are all there.
  for c in "${COMPONENTS[@]}"; do [ -x "$stage/bin/$c" ]; done
}

say "building Armada $ARMADA_VERSION and fetching Pulsar $PULSAR_VERSION (minutes on 2 cores; logs in $logs)"
fetch_pulsar >"$logs/pulsar-$PULSAR_VERSION.log" 2>&1 &
pulsar_pid=$!
if ! build_armada >"$logs/armada-$ARMADA_VERSION.log" 2>&1; then
  kill "$pulsar_pid" 2>/dev/null || true
  tail -n 30 "$logs/armada-$ARMADA_VERSION.log" >&2
  die "building Armada failed; log: $logs/armada-$ARMADA_VERSION.log"
fi
say "Armada built in $(($(date +%s) - start))s"
if ! wait "$pulsar_pid"; then
  tail -n 30 "$logs/pulsar-$PULSAR_VERSION.log" >&2
  die "fetching Pulsar's jars failed; log: $logs/pulsar-$PULSAR_VERSION.log"
fi

end=$(date +%s)
{
  echo "armada=$ARMADA_MODULE@$ARMADA_VERSION"
  echo "pulsar=org.apache.pulsar:pulsar-broker:$PULSAR_VERSION ($(ls "$stage/pulsar/lib" | wc -l) jars)"
  echo "go=$("$GO" version | awk '{print $3}')"
  echo "built_at=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "build_seconds=$((end - start))"
} >"$stage/BUILD-INFO"
chmod 755 "$stage"
rm -rf "$dest"
mv "$stage" "$dest"
say "built in $((end - start))s: $dest"
echo "$dest"
