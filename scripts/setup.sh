#!/usr/bin/env bash
# Installs what zerodp needs, from Debian's packages only, for one purpose:
#   scripts/setup.sh run    what `make run`, `make install` and `make deb` need: the compilers,
#                           the libraries the program links (oneDNN among them, the bf16
#                           kernel), pybind11 for `import zerodp`
#   scripts/setup.sh web    run's, and emscripten with node's parser for the page (make web)
#   scripts/setup.sh test   all of it: web's, clang and its sanitizer runtimes, the network tools
#                           of the cluster tests, chromium for the page's tests, PyTorch for the
#                           checks against it, bash-completion for the completion's test,
#                           lintian and debootstrap for the packages' test, the locales'
#                           sources for the module's decimal-comma test (compiled by the test)
# (no argument: test). Idempotent: asks apt for nothing when every package is already installed.
set -euo pipefail

run=(
  build-essential cmake pkg-config file
  libcli11-dev nlohmann-json3-dev
  libgtest-dev libgmock-dev
  python3 python3-dev pybind11-dev
  libopenblas-dev libdnnl-dev
  libssl-dev
  libopenmpi-dev openmpi-bin
)
web=(emscripten node-acorn)
test=(
  clang libclang-rt-dev iproute2 nftables chromium python3-torch bash-completion
  lintian debootstrap man-db groff-base locales
)

case "${1:-test}" in
  run) packages=("${run[@]}") ;;
  web) packages=("${run[@]}" "${web[@]}") ;;
  test) packages=("${run[@]}" "${web[@]}" "${test[@]}") ;;
  *)
    echo "setup.sh: expected run, web or test, got '$1'" >&2
    exit 2
    ;;
esac

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
