#!/usr/bin/env bash
# A Debian base image for the runtime, made without Docker Hub: debootstrap (minbase) of
# Debian's python3, python3-venv and python3-pip for linux/amd64 and linux/arm64 from the apt
# mirror this machine is configured with, each root filesystem packed as a tar, and the two
# pushed as one image index (FROM scratch + ADD rootfs.tar) through the buildx builder of
# scripts/image-builder.sh.
#
#   eval "$(scripts/image-builder.sh start)"
#   scripts/build-base-image.sh            # last line of stdout: the pushed image reference
#   scripts/build-base-image.sh --print-ref   # only the reference this run would push
#
# The root filesystems are cached under $ARMADA_FLYTE_CACHE/base-image/KEY/, KEY being a hash of
# the suite, the mirror, the Date of the suite's Release file, the week (for SUITE-updates and
# SUITE-security), the package list and this script's recipe version; a rerun with the same KEY
# only checks that the registry has the tag, or pushes the cached root filesystems again.
#
# Environment:
#   ARMADA_FLYTE_REGISTRY  registry to push to (default 127.0.0.1:5055)
#   ARMADA_FLYTE_BUILDER   buildx builder (default armada-flyte)
#   DEBIAN_SUITE           default bookworm (its python3 is 3.11, the runtime's default Python)
#   DEBIAN_MIRROR          default: the URI apt uses for DEBIAN_SUITE (/etc/apt/sources.list*)
#   BASE_ARCHES            default "amd64 arm64"
#   BASE_IMAGE_NAME        default armada-flyte-base
#   BASE_UPGRADE           1 (default): apply SUITE-updates and SUITE-security; 0: release only
#   BASE_REFRESH_PERIOD    default: this ISO week (2026-W49); a new value rebuilds with fresh updates
# Needs root (debootstrap, chroot).
set -euo pipefail

RECIPE=1 # bump when what goes into the root filesystem changes
suite=${DEBIAN_SUITE:-bookworm}
arches=${BASE_ARCHES:-amd64 arm64}
registry=${ARMADA_FLYTE_REGISTRY:-127.0.0.1:5055}
builder=${ARMADA_FLYTE_BUILDER:-armada-flyte}
name=${BASE_IMAGE_NAME:-armada-flyte-base}
upgrade=${BASE_UPGRADE:-1}
packages=python3,python3-venv,python3-pip,ca-certificates
cache=${ARMADA_FLYTE_CACHE:-$HOME/.cache/armada-flyte}/base-image

log() { echo "==> $*" >&2; }
die() { echo "build-base-image: $*" >&2; exit 1; }

[ "$(id -u)" -eq 0 ] || die "needs root (debootstrap and chroot)"

# apt's URI for a suite: deb822 .sources blocks, then one-line sources.list entries.
apt_uri_for() {
  local want=$1 file
  for file in /etc/apt/sources.list.d/*.sources; do
    [ -f "$file" ] || continue
    awk -v want="$want" '
      BEGIN { RS = ""; FS = "\n" }
      {
        uri = ""; hit = 0
        for (i = 1; i <= NF; i++) {
          if ($i ~ /^URIs:/) { split($i, a, /[ \t]+/); uri = a[2] }
          if ($i ~ /^Suites:/) { n = split($i, s, /[ \t]+/); for (j = 2; j <= n; j++) if (s[j] == want) hit = 1 }
        }
        if (hit && uri != "") { print uri; exit }
      }' "$file"
  done
  cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null | awk -v want="$want" '$1 == "deb" { u = ($2 ~ /^\[/) ? $3 : $2; s = ($2 ~ /^\[/) ? $4 : $3; if (s == want) print u }' || true
}

mirror=${DEBIAN_MIRROR:-$(apt_uri_for "$suite" | head -n1 || true)}
[ -n "$mirror" ] || die "no apt source for $suite: set DEBIAN_MIRROR"
mirror=${mirror%/}
security_mirror=$(apt_uri_for "$suite-security" | head -n1 || true)
security_mirror=${security_mirror:-${mirror%/debian}/debian-security}
security_mirror=${security_mirror%/}

export DEBIAN_FRONTEND=noninteractive
missing=()
command -v debootstrap >/dev/null 2>&1 || missing+=(debootstrap)
[ -f /usr/share/keyrings/debian-archive-keyring.gpg ] || missing+=(debian-archive-keyring)
command -v curl >/dev/null 2>&1 || missing+=(curl)
if [ ${#missing[@]} -gt 0 ]; then
  log "apt-get install ${missing[*]}"
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

release_date() { curl -fsS "$1/dists/$2/InRelease" | sed -n 's/^Date: //p' | head -n1; }
dates="$(release_date "$mirror" "$suite")"
[ -n "$dates" ] || die "cannot read $mirror/dists/$suite/InRelease"
# SUITE-updates and SUITE-security publish almost daily; keying on their dates would redo the
# debootstrap nearly every run. They are keyed by period instead (an ISO week by default), so
# the cached root filesystems are at most that old; the main suite changes at point releases.
if [ "$upgrade" = 1 ]; then
  period=${BASE_REFRESH_PERIOD:-$(date -u +%G-W%V)}
  dates="$dates|updates $period"
fi
key=$(printf '%s\n' "$RECIPE" "$suite" "$mirror" "$security_mirror" "$dates" "$packages" "$upgrade" \
      | sha256sum | cut -c1-12)
ref="$registry/$name:$suite-$key"
dir=$cache/$suite-$key
if [ "${1:-}" = --print-ref ]; then echo "$ref"; exit 0; fi
mkdir -p "$dir"
log "base image $ref (Release dates: $dates)"

# The manifest (list) is there already: nothing to do.
if curl -fsS -o /dev/null -I \
     -H 'Accept: application/vnd.oci.image.index.v1+json' \
     -H 'Accept: application/vnd.docker.distribution.manifest.list.v2+json' \
     "http://$registry/v2/$name/manifests/$suite-$key" 2>/dev/null; then
  log "$ref is in the registry already"
  echo "$ref"
  exit 0
fi

mounted=()
cleanup() {
  local m
  for m in "${mounted[@]}"; do umount -l "$m" 2>/dev/null || true; done
}
trap cleanup EXIT

in_root() { chroot "$1" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 \
  DEBIAN_FRONTEND=noninteractive "${@:2}"; }

make_rootfs() {
  local arch=$1 root=$dir/root-$arch tarball=$dir/rootfs-$arch.tar started
  if [ -f "$tarball" ]; then log "$arch: cached $tarball"; return; fi
  started=$(date +%s)
  rm -rf "$root"
  log "$arch: debootstrap --variant=minbase $suite from $mirror"
  # On a foreign architecture, debootstrap's second stage runs the target's binaries in the
  # chroot; QEMU's binfmt_misc entry (flag F) makes that transparent.
  debootstrap --variant=minbase --arch="$arch" --include="$packages" \
    --keyring=/usr/share/keyrings/debian-archive-keyring.gpg \
    "$suite" "$root" "$mirror" >"$dir/debootstrap-$arch.log" 2>&1 \
    || { tail -n 30 "$dir/debootstrap-$arch.log" >&2; die "$arch: debootstrap failed (log: $dir/debootstrap-$arch.log)"; }
  log "$arch: debootstrap took $(( $(date +%s) - started ))s"

  local step=$(date +%s)
  rm -f "$root/etc/apt/sources.list"
  {
    printf 'Types: deb\nURIs: %s\nSuites: %s %s-updates\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n\n' \
      "$mirror" "$suite" "$suite"
    printf 'Types: deb\nURIs: %s\nSuites: %s-security\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
      "$security_mirror" "$suite"
  } >"$root/etc/apt/sources.list.d/debian.sources"
  if [ "$upgrade" = 1 ]; then
    cp /etc/resolv.conf "$root/etc/resolv.conf"
    mount -t proc proc "$root/proc" && mounted+=("$root/proc")
    log "$arch: apt-get upgrade from $suite-updates and $suite-security"
    in_root "$root" apt-get update -qq >>"$dir/debootstrap-$arch.log" 2>&1
    in_root "$root" apt-get -y -qq -o Dpkg::Options::=--force-confold upgrade >>"$dir/debootstrap-$arch.log" 2>&1 \
      || { tail -n 30 "$dir/debootstrap-$arch.log" >&2; die "$arch: apt-get upgrade failed"; }
    umount "$root/proc"
    mounted=()
    log "$arch: upgrade took $(( $(date +%s) - step ))s"
  fi
  in_root "$root" apt-get clean
  rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/*.bin "$root"/var/log/*.log \
    "$root"/var/log/apt/* "$root"/tmp/* "$root"/root/.cache
  : >"$root/etc/resolv.conf"
  # Python from Debian, and the venv module that the runtime's Dockerfile uses.
  in_root "$root" python3 -c 'import ensurepip, venv, ssl, sys; print(sys.version.split()[0])' >&2

  tar --numeric-owner --xattrs --xattrs-include='*' -C "$root" \
    --exclude='./dev/*' --exclude='./proc/*' --exclude='./sys/*' --exclude='./run/*' \
    -cf "$tarball.part" .
  mv "$tarball.part" "$tarball"
  rm -rf "$root"
  log "$arch: $(du -h "$tarball" | cut -f1) root filesystem in $(( $(date +%s) - started ))s"
}

platforms=()
for arch in $arches; do
  make_rootfs "$arch"
  platforms+=("linux/$arch")
done

cat >"$dir/Dockerfile" <<'EOF'
FROM scratch
ARG TARGETARCH
ADD rootfs-${TARGETARCH}.tar /
ENV LANG=C.UTF-8
CMD ["bash"]
EOF
cat >"$dir/.dockerignore" <<'EOF'
*
!rootfs-*.tar
EOF

started=$(date +%s)
platform_list=$(IFS=,; echo "${platforms[*]}")
log "pushing $ref ($platform_list)"
docker buildx build --builder "$builder" --platform "$platform_list" \
  --label "org.opencontainers.image.description=Debian $suite minbase with python3, python3-venv, python3-pip" \
  --tag "$ref" --tag "$registry/$name:$suite" --push --progress plain "$dir" >"$dir/push.log" 2>&1 \
  || { tail -n 30 "$dir/push.log" >&2; die "push failed (log: $dir/push.log)"; }
log "pushed in $(( $(date +%s) - started ))s"
echo "$ref"
