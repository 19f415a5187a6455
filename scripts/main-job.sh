#!/usr/bin/env bash
# The README's main job, run by `make run` after the build.
set -euo pipefail
build=${1:-build}
mkdir -p out
"$build/zerodp" plan --params 1e9 --gpus 8
"$build/zerodp" plot --params 1e9 --max-gpus 64 --out out/memory.svg
