#!/usr/bin/env bash
# Installs what zerodp needs to build and test, from Debian's packages only.
# Idempotent: asks apt for nothing when every package is already installed.
set -euo pipefail

packages=(
  build-essential cmake pkg-config
  libcli11-dev nlohmann-json3-dev
  libgtest-dev libgmock-dev
  python3
  libopenblas-dev
  libssl-dev
  libopenmpi-dev openmpi-bin
  clang libclang-rt-dev
  iproute2 nftables
  emscripten node-acorn chromium
  python3-torch
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
echo "setup: installing ${missing[*]}"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
