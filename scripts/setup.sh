#!/usr/bin/env bash
# Installs what building and testing rmmgo needs on a Debian machine
# (the Go toolchain itself is expected at /usr/local/go or on PATH).
set -euo pipefail
SUDO=""
[ "$(id -u)" = 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
need=()
for p in build-essential cmake pkg-config binutils python3 python3-pytest python3-numpy; do
  dpkg -s "$p" >/dev/null 2>&1 || need+=("$p")
done
if [ ${#need[@]} -gt 0 ]; then
  $SUDO apt-get update
  $SUDO apt-get install -y --no-install-recommends "${need[@]}"
fi
export PATH="$PATH:/usr/local/go/bin"
go mod download
