#!/usr/bin/env bash
# What the tests run for real, from Debian's packages: docker-registry (image tests), the
# docker.io engine (Docker SDK paths and the docker pod runner), htpasswd (a basic-auth registry),
# kubectl (kubernetes-client: pods of Armada's gang and service cases query the embedded cluster, and the
# real tier's Kubernetes beds), openssl (those beds' certificates),
# a static busybox for FROM-scratch images (and the alpine programs of Armada's testsuite cases),
# stress-ng (its load cases), Chromium (the local view's browser test, headless), and QEMU in
# binfmt_misc with a busybox of the other architecture (a foreign-arch pod really running under
# emulation). Installs only what is
# missing; needs root (CI runs as root).
set -euo pipefail
if [ "$(id -u)" -ne 0 ]; then
  echo "==> not root: not installing test parts (tests needing them skip locally, fail under CI)"
  exit 0
fi
export DEBIAN_FRONTEND=noninteractive
updated=""
apt_update() { [ -n "$updated" ] || { apt-get update -qq; updated=1; }; }

packages=()
command -v docker-registry >/dev/null 2>&1 || packages+=(docker-registry)
command -v dockerd >/dev/null 2>&1 || packages+=(docker.io)
command -v htpasswd >/dev/null 2>&1 || packages+=(apache2-utils)
command -v kubectl >/dev/null 2>&1 || packages+=(kubernetes-client)
command -v openssl >/dev/null 2>&1 || packages+=(openssl) # the certificates of the real tier's Kubernetes beds
dpkg -s busybox-static >/dev/null 2>&1 || packages+=(busybox-static)
command -v stress-ng >/dev/null 2>&1 || packages+=(stress-ng)
command -v chromium >/dev/null 2>&1 || packages+=(chromium)
dpkg -s qemu-user-static >/dev/null 2>&1 || packages+=(qemu-user-static)
command -v update-binfmts >/dev/null 2>&1 || packages+=(binfmt-support)
if [ ${#packages[@]} -gt 0 ]; then
  echo "==> apt-get install ${packages[*]}"
  apt_update
  apt-get install -y -qq --no-install-recommends "${packages[@]}" >/dev/null
fi

native=$(dpkg --print-architecture)
case "$native" in
  amd64) foreign=arm64 qemu=qemu-aarch64 ;;
  arm64) foreign=amd64 qemu=qemu-x86_64 ;;
  *) exit 0 ;;
esac
mountpoint -q /proc/sys/fs/binfmt_misc || mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc \
  || echo "==> could not mount binfmt_misc: the foreign-architecture pod test will report it"
grep -qx enabled "/proc/sys/fs/binfmt_misc/$qemu" 2>/dev/null || update-binfmts --enable "$qemu" \
  || echo "==> could not enable $qemu in binfmt_misc: the foreign-architecture pod test will report it"

target=/usr/local/lib/armada-flyte-tests/busybox-$foreign
if [ ! -x "$target" ]; then
  echo "==> $target (Debian's busybox-static:$foreign)"
  dpkg --print-foreign-architectures | grep -qx "$foreign" || { dpkg --add-architecture "$foreign"; updated=""; }
  apt_update
  download=$(mktemp -d)
  chown _apt "$download" 2>/dev/null || true
  (cd "$download" && apt-get download -qq "busybox-static:$foreign")
  mkdir -p "$(dirname "$target")"
  dpkg-deb --fsys-tarfile "$download"/busybox-static_*_"$foreign".deb | tar -xO ./bin/busybox > "$target.part"
  chmod 755 "$target.part" && mv "$target.part" "$target"
  rm -rf "$download"
fi
