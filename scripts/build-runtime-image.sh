#!/usr/bin/env bash
# Builds images/Dockerfile for linux/amd64 and linux/arm64 on the Debian base image of
# scripts/build-base-image.sh, installs armada-flyte from this checkout and flyte from the
# package index, pushes one image index to the local registry, and checks it:
#   - `docker buildx imagetools inspect` lists linux/amd64 and linux/arm64;
#   - on each platform (arm64 under QEMU) the image runs as a non-root user with a0 on PATH.
#
#   eval "$(scripts/image-builder.sh start)"
#   base=$(scripts/build-base-image.sh | tail -n1)
#   scripts/build-runtime-image.sh "$base"      # last line of stdout: the pushed reference
#
# Environment: ARMADA_FLYTE_REGISTRY (default 127.0.0.1:5055), ARMADA_FLYTE_BUILDER (default
# armada-flyte), PLATFORMS (default linux/amd64,linux/arm64), RUNTIME_TAG (default
# 0.1.0-py3.11-debian), RUNTIME_IMAGE_NAME (default armada-flyte-runtime).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/.." && pwd)
registry=${ARMADA_FLYTE_REGISTRY:-127.0.0.1:5055}
builder=${ARMADA_FLYTE_BUILDER:-armada-flyte}
platforms=${PLATFORMS:-linux/amd64,linux/arm64}
name=${RUNTIME_IMAGE_NAME:-armada-flyte-runtime}
tag=${RUNTIME_TAG:-0.1.0-py3.11-debian}
base=${1:?usage: $0 BASE_IMAGE_REFERENCE}
ref="$registry/$name:$tag"
logs=${ARMADA_FLYTE_CACHE:-$HOME/.cache/armada-flyte}/image-builder/logs
mkdir -p "$logs"

log() { echo "==> $*" >&2; }

# pip inside the build trusts what pip here trusts (a TLS-inspecting proxy's CA, for one).
secret=()
cert=${PIP_CERT:-${SSL_CERT_FILE:-}}
if [ -n "$cert" ] && [ -s "$cert" ]; then
  secret=(--secret "id=pip-cert,src=$cert")
fi

started=$(date +%s)
log "building $ref for $platforms FROM $base"
# The same command line `armada-flyte image build --push` plans, plus BASE_IMAGE and --builder.
docker buildx build --builder "$builder" \
  --file "$repo/images/Dockerfile" \
  --platform "$platforms" \
  --build-arg PYTHON_VERSION=3.11 \
  --build-arg "BASE_IMAGE=$base" \
  --build-arg ARMADA_FLYTE_FROM=source \
  --build-context "armada-flyte-source=$repo" \
  "${secret[@]}" \
  --tag "$ref" --push --progress plain \
  "$repo/images" >"$logs/runtime-build.log" 2>&1 \
  || { tail -n 40 "$logs/runtime-build.log" >&2; echo "build failed (log: $logs/runtime-build.log)" >&2; exit 1; }
log "built and pushed in $(( $(date +%s) - started ))s (log: $logs/runtime-build.log)"

inspect=$(docker buildx imagetools inspect --builder "$builder" "$ref")
echo "$inspect" >&2
for platform in ${platforms//,/ }; do
  grep -q "Platform: *$platform\$" <<<"$inspect" || { echo "the index has no $platform" >&2; exit 1; }
done

# Run the image on each platform: a build stage FROM it that fails unless the user is not root
# and a0 is on PATH; the result stays in the build cache (nothing is exported).
check=$(mktemp -d)
trap 'rm -rf "$check"' EXIT
cat >"$check/Dockerfile" <<'EOF'
ARG IMAGE
FROM ${IMAGE}
RUN set -e; uname -m; id; test "$(id -u)" != 0; command -v a0; a0 --help >/dev/null; \
    python -c 'import flyte, armada_flyte; print("flyte", flyte.__version__)'
EOF
started=$(date +%s)
docker buildx build --builder "$builder" --platform "$platforms" --build-arg "IMAGE=$ref" \
  --no-cache --output type=cacheonly --progress plain "$check" >"$logs/runtime-check.log" 2>&1 \
  || { tail -n 40 "$logs/runtime-check.log" >&2; echo "the image check failed (log: $logs/runtime-check.log)" >&2; exit 1; }
grep -E 'x86_64|aarch64|uid=|/a0$|^#[0-9]+ [0-9.]+ flyte ' "$logs/runtime-check.log" | sed 's/^/    /' >&2 || true
log "checked both platforms in $(( $(date +%s) - started ))s"
echo "$ref"
