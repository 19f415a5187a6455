#!/usr/bin/env bash
# Prints what a set of runs and plans give, one line each, so that a change meant to move code
# without changing results can be checked: record before, record after, diff the two files.
#   scripts/record_bits.sh build/zerodp > before.txt   # on the old tree
#   scripts/record_bits.sh build/zerodp > after.txt    # on the new tree, same machine
#   diff before.txt after.txt
# A training run's line holds its weights' SHA-256, its losses and the bytes the ledger
# measured; a measure's line its bytes held and sent per stage; a plan's line the SHA-256 of its
# JSON and of its table. Bits depend on the CPU (OpenBLAS and oneDNN pick kernels by it): compare
# two records of the same machine only. Timings (and the efficiencies made of them) and the OS's
# resident sizes are left out.
set -euo pipefail
shopt -s inherit_errexit
zerodp=${1:-build/zerodp}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

gpt=(--layers 2 --heads 2 --hidden 64 --seq-len 32 --eval-every 3 --eval-batches 2)
train_line() {
  "$zerodp" train "$@" --json --out "$work/out" | python3 -c '
import json, sys
j = json.load(sys.stdin)
keys = ["weights_sha256", "first_loss", "final_loss", "val_loss", "model_state_bytes",
        "peak_bytes", "predicted_peak_bytes", "predicted_model_state_bytes", "activation_bytes"]
print(" ".join(f"{k}={j.get(k)}" for k in keys))'
}

for stage in 0 1 2 3; do
  for precision in bf16 fp16; do
    args=("${gpt[@]}" --steps 6 --stage "$stage" --ranks 2 --precision "$precision")
    echo "train ${args[*]}: $(train_line "${args[@]}")"
  done
done
for extra in "--ranks 2 --compute fp32" "--ranks 2 --grad-accum 2 --micro-batch 2" \
  "--ranks 4 --zeropp qwz,hpz,qgz" "--ranks 2 --checkpoint-activations"; do
  # shellcheck disable=SC2206
  args=("${gpt[@]}" --steps 6 --stage 3 $extra)
  echo "train ${args[*]}: $(train_line "${args[@]}")"
done
args=(--model mlp --params 100k --steps 6 --stage 3 --ranks 2)
echo "train ${args[*]}: $(train_line "${args[@]}")"

# A stop and a resume: the resumed run's weights.
rm -rf "$work/ck"
"$zerodp" train "${gpt[@]}" --ranks 2 --steps 3 --save-dir "$work/ck" --json --out "$work/out" \
  > /dev/null
echo "resume ${gpt[*]} --ranks 2 (3 then 6): $(train_line --resume "$work/ck" --steps 6)"
rm -rf "$work/ck"
"$zerodp" train "${gpt[@]}" --ranks 2 --precision fp16 --steps 3 --save-dir "$work/ck" --json \
  --out "$work/out" > /dev/null
echo "resume fp16 (3 then 6): $(train_line --resume "$work/ck" --steps 6)"

for stage in 0 1 2 3; do
  echo "measure --stage $stage: $("$zerodp" measure --model mlp --params 200k --steps 2 \
    --stage "$stage" --json | python3 -c '
import json, sys
j = json.load(sys.stdin)
def strip(v):  # timings differ from run to run
    if isinstance(v, dict):
        return {k: strip(x) for k, x in v.items() if "second" not in k and "time" not in k and not k.startswith("rss")
                and "efficiency" not in k and "hidden" not in k}
    if isinstance(v, list):
        return [strip(x) for x in v]
    return v
print(json.dumps(strip(j), sort_keys=True))' | sha256sum | cut -c1-16)"
done

plans=(
  "--params 7.5e9 --gpus 64"
  "--model llama-3-8b --gpus 8 --gpu a100-40gb"
  "--model llama-3-70b --gpu h100-80gb --seq-len 4096"
  "--params 1e9 --gpus 4 --activations 2GB --gpu-memory 24GB"
  "--deepspeed-config examples/ds_zero3_offload.json --model llama-3-8b --gpus 4 --gpu rtx-4090 --host-memory 64GB"
)
for p in "${plans[@]}"; do
  # shellcheck disable=SC2086
  json=$("$zerodp" plan $p --json | sha256sum | cut -c1-16)
  # shellcheck disable=SC2086
  table=$("$zerodp" plan $p | sha256sum | cut -c1-16)
  echo "plan $p: json=$json table=$table"
done
