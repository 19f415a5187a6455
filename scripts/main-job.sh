#!/usr/bin/env bash
# The README's main job, run by `make run` after the build: plan a byte-level GPT on 4 ranks,
# then train it with ZeRO-3 on 4 thread ranks on the default corpus (about three minutes on
# 2 cores) and show what it learned.
set -euo pipefail
build=${1:-build}
zerodp="$build/zerodp"
mkdir -p out

echo "== What each rank will hold and send: the planner, for this GPT (Φ = 3,257,856) on 4 ranks"
"$zerodp" plan --params 3257856 --gpus 4
"$zerodp" plot --params 3257856 --max-gpus 64 --out out/memory.svg >/dev/null
echo
echo "== Will it fit in 160 MB per rank? The engine's peak, predicted before anything is allocated"
"$zerodp" train --stage 3 --ranks 4 --rank-memory 160MB --dry-run
echo
echo "== Training it: ZeRO-3 on 4 thread ranks, default corpus, each rank held to 160 MB"
# Each `make run` is a new run, and a save dir belongs to one run (docs/checkpoints.md): the
# previous job's checkpoints go first.
rm -rf out/checkpoints
"$zerodp" train --stage 3 --ranks 4 --steps 100 --lr 2e-3 --warmup 20 --eval-every 20 \
  --rank-memory 160MB --save-dir out/checkpoints --save-every 50 --out out
echo
echo "== A sample from the trained model"
"$zerodp" sample --checkpoint out/checkpoints --prompt "This License " --length 160
echo
echo "Loss curve: out/loss.svg (and out/loss.csv); memory figure: out/memory.svg;"
echo "checkpoints: out/checkpoints; \`zerodp train --resume out/checkpoints --steps 200\` trains on,"
echo "\`zerodp export --checkpoint out/checkpoints --out model\` writes a Hugging Face folder"
