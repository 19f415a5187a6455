#!/usr/bin/env bash
# The seed's Examples 8 (cell H: no stage fits at N = 4) and 5 (cell E: the least N for
# ZeRO-3), scaled to this machine and proven by runs: the planner's verdict for a per-rank
# budget (train --dry-run --rank-memory), then, for every stage, a run at N = 4, and for each
# stage the planner says fits somewhere, runs at its least N - 1 (refused by the budget) and
# at its least N (trains). Output: docs/memory.md. Usage: scripts/seed_budgets.sh [build]
#
# Scaling: the parameter count and the GPU's memory shrink by the same factor (1/1000 for
# Example 8: 10B -> 10M parameters, 24 GB -> 24 MB; 1/10000 for Example 5: 175B -> 17.5M,
# 80 GB -> 8 MB), and the model keeps a real model's proportions where they decide the
# peak: many layers (40; GPT-3's 96 for Example 5), so one layer, which the engine gathers
# and computes in fp32, is a small part of the whole, and activation checkpointing with a
# short context, so activations stay small as in the seed's budgets.
set -euo pipefail
build=${1:-build}
zerodp="$build/zerodp"
run_flags() { echo "--heads 4 --seq-len 32 --micro-batch 1 --checkpoint-activations --steps 1 --eval-batches 0 --out ''"; }

least_n() {  # least_n STAGE FLAGS... -> the planner's least N at that stage, or "null"
  local stage=$1
  shift
  "$zerodp" train "$@" --dry-run --json |
    python3 -c "import json,sys; print(json.dumps(json.load(sys.stdin)['budget']['least_ranks']['$stage']))"
}

try_run() {  # try_run N STAGE FLAGS...: one line, trains or refused
  local n=$1 stage=$2
  shift 2
  local out
  if out=$(eval "\"$zerodp\" train $* $(run_flags) --ranks $n --stage $stage --json" 2>&1); then
    python3 -c "import json,sys; j=json.loads(sys.argv[1]); print(f'  ZeRO-$stage at N = $n: trains; peak {j[\"peak_bytes\"]:,} B measured, {j[\"predicted_peak_bytes\"]:,} B predicted')" "$out"
  else
    local line=${out##*zerodp: error: }  # the first refusal's line, without its advice
    echo "  ZeRO-$stage at N = $n: refused: ${line%%; --rank-memory*}"
  fi
}

example() {  # example TITLE BUDGET FLAGS...
  local title=$1 budget=$2
  shift 2
  echo "== $title: --rank-memory $budget"
  echo "\$ zerodp train $* $(run_flags) --ranks 4 --stage 3 --rank-memory $budget --dry-run"
  eval "\"$zerodp\" train $* $(run_flags) --ranks 4 --stage 3 --rank-memory $budget --dry-run" |
    grep -E "^  (model|peak|budget|what fits) " | sed 's/^/  /'
  for stage in 0 1 2 3; do try_run 4 $stage "$@" --rank-memory "$budget"; done
  for stage in 0 1 2 3; do
    local n
    n=$(eval "least_n $stage $* $(run_flags) --ranks 4 --stage $stage --rank-memory $budget")
    [ "$n" = null ] && continue
    [ "$n" -gt 1 ] && try_run $((n - 1)) $stage "$@" --rank-memory "$budget"
    try_run "$n" $stage "$@" --rank-memory "$budget"
  done
  echo
}

example "Example 8 scaled 1/1000 (10M parameters, 24 GB -> 24 MB)" 24MB --layers 40 --hidden 144
example "Example 5 scaled 1/10000 (17.5M parameters, 80 GB -> 8 MB)" 8MB --layers 96 --hidden 120
