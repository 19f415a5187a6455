#!/usr/bin/env bash
# Builds the planner's web page (docs/web.md) into SITE (default build-web/): index.html,
# app.js, style.css and zerodp.js, the planner compiled to WebAssembly by Debian's emscripten
# with the wasm inside. The CMake tree lives in SITE.cmake/, beside it, so SITE holds only
# what a static server serves.
#
# Exit status 77 (and one line) when em++ is missing, so tests can skip rather than fail.
set -euo pipefail

site=${1:-build-web}
root=$(cd "$(dirname "$0")/.." && pwd)
case "$site" in /*) ;; *) site="$PWD/$site" ;; esac

if ! command -v em++ > /dev/null || ! command -v emcmake > /dev/null; then
  echo "build-web: em++ not found (apt-get install emscripten node-acorn; scripts/setup.sh)"
  exit 77
fi
# emscripten's JavaScript tools need acorn; Debian ships it as node-acorn, under
# /usr/share/nodejs, which a node that is not Debian's own does not search.
export NODE_PATH="/usr/share/nodejs${NODE_PATH:+:$NODE_PATH}"

emcmake cmake -S "$root/web" -B "$site.cmake" -DCMAKE_BUILD_TYPE=Release -DCMAKE_UNITY_BUILD=ON \
  -DZERODP_WEB_SITE="$site" > /dev/null
cmake --build "$site.cmake" -j "${JOBS:-$(nproc)}"
