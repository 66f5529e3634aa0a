#!/usr/bin/env bash
# Debian packages the tests run for real. Installs only what is missing; needs root (CI is root).
set -euo pipefail
packages=()
command -v docker-registry >/dev/null 2>&1 || packages+=(docker-registry)
command -v dockerd >/dev/null 2>&1 || packages+=(docker.io)
command -v htpasswd >/dev/null 2>&1 || packages+=(apache2-utils)
if [ ${#packages[@]} -eq 0 ]; then
  exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "==> not root: skipping apt-get install ${packages[*]} (tests needing them skip locally, fail under CI)"
  exit 0
fi
echo "==> apt-get install ${packages[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${packages[@]}" >/dev/null
