#!/usr/bin/env bash
# Builds images/Dockerfile for linux/amd64 and linux/arm64 on the Debian base image of
# scripts/build-base-image.sh with `armada-flyte image build` (a wheel of this checkout, flyte
# from the package index), pushes one image index to the local registry, and checks it:
#   - `docker buildx imagetools inspect` lists linux/amd64 and linux/arm64;
#   - on each platform (arm64 under QEMU) the image runs as a non-root user with a0 on PATH.
#
#   eval "$(scripts/image-builder.sh start)"
#   base=$(scripts/build-base-image.sh | tail -n1)
#   scripts/build-runtime-image.sh "$base"      # last line of stdout: the pushed reference
#
# The image is tagged TAG, and TAG-KEY once it passed the checks, KEY being a hash of its inputs
# (the Dockerfile, the wheel of this checkout, the base reference, the platforms): when the
# registry has TAG-KEY already, nothing is built or checked again. Needs the venv (scripts/setup-venv.sh) for armada-flyte.
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
cli=${ARMADA_FLYTE_CLI:-$repo/.venv/bin/armada-flyte}
python=$(dirname "$cli")/python
wheels=${ARMADA_FLYTE_CACHE:-$HOME/.cache/armada-flyte}/runtime-wheel
logs=${ARMADA_FLYTE_CACHE:-$HOME/.cache/armada-flyte}/image-builder/logs
mkdir -p "$logs"

log() { echo "==> $*" >&2; }

[ -x "$cli" ] || { echo "build-runtime-image: no $cli: run scripts/setup-venv.sh test first" >&2; exit 1; }

# The same wheel `armada-flyte image build` makes (same command, same folder, same bytes).
mkdir -p "$wheels"
SOURCE_DATE_EPOCH=315532800 "$python" -m pip wheel --no-deps --quiet --wheel-dir "$wheels" "$repo" >&2
version=$(sed -n 's/^version = "\(.*\)"$/\1/p' "$repo/pyproject.toml" | head -n1)
wheel="$wheels/armada_flyte-$version-py3-none-any.whl"
[ -f "$wheel" ] || { echo "build-runtime-image: pip made no $wheel" >&2; exit 1; }
key=$(cat "$repo/images/Dockerfile" "$wheel" <(printf '%s\n' "$base" "$platforms") | sha256sum | cut -c1-12)
ref="$registry/$name:$tag"
keyed="$ref-$key"

if curl -fsS -o /dev/null -I \
     -H 'Accept: application/vnd.oci.image.index.v1+json' \
     -H 'Accept: application/vnd.docker.distribution.manifest.list.v2+json' \
     "http://$registry/v2/$name/manifests/$tag-$key" 2>/dev/null; then
  log "$keyed is in the registry already (same Dockerfile, wheel, base and platforms): reusing it"
  echo "$keyed"
  exit 0
fi

started=$(date +%s)
log "building $keyed for $platforms FROM $base (log: $logs/runtime-build.log)"
# pip inside the build trusts what pip here trusts (the CLI reads PIP_CERT / SSL_CERT_FILE).
"$cli" image build --builder "$builder" --platform "$platforms" --base-image "$base" \
  --tag "$ref" --push --progress plain >"$logs/runtime-build.log" 2>&1 \
  || { tail -n 40 "$logs/runtime-build.log" >&2; echo "build failed (log: $logs/runtime-build.log)" >&2; exit 1; }
log "built and pushed in $(( $(date +%s) - started ))s"

inspect=$(docker buildx imagetools inspect --builder "$builder" "$ref")
digest=$(sed -n 's/^Digest: *//p' <<<"$inspect" | head -n1)
built="$registry/$name@$digest"
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
docker buildx build --builder "$builder" --platform "$platforms" --build-arg "IMAGE=$built" \
  --no-cache --output type=cacheonly --progress plain "$check" >"$logs/runtime-check.log" 2>&1 \
  || { tail -n 40 "$logs/runtime-check.log" >&2; echo "the image check failed (log: $logs/runtime-check.log)" >&2; exit 1; }
grep -E 'x86_64|aarch64|uid=|/a0$|^#[0-9]+ [0-9.]+ flyte ' "$logs/runtime-check.log" | sed 's/^/    /' >&2 || true
log "checked both platforms in $(( $(date +%s) - started ))s"
# Only a checked image gets the keyed tag that later runs reuse.
docker buildx imagetools create --builder "$builder" --tag "$keyed" "$built" >&2
log "tagged $keyed ($digest)"
echo "$keyed"
