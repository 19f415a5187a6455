#!/usr/bin/env bash
# What each optimizer the engine runs gives for the same training: `make run`'s configuration
# (the default GPT, ZeRO-3 on 4 thread ranks, warm-up 20) trained --steps steps (default 300)
# with each of adamw, adamw-8bit, adafactor, lion, lion-8bit, sgd-momentum and sgd (or those --optimizers
# lists, adamw among them), at its default learning rate and at half and twice that (or the
# --factors of it given; a rate tuned for AdamW is not one for SGD), and the validation loss of
# each run
# (the mean over --eval-batches micro-batches of held-out windows, the same windows for all).
# Each run is set against AdamW's at its default rate. The losses do not depend on the machine's
# load (the runs are deterministic); the step's own time is bench/bench_optim's to measure.
#
# Not part of CI (twenty-one runs of one to six minutes each on two cores);
# docs/performance.md has its figures.
#
#   scripts/optimizer_quality.sh [--build DIR] [--steps N] [--eval-batches K]
#                                [--optimizers adamw,adamw-8bit,...] [--factors 0.5,1,2]
set -euo pipefail
cd "$(dirname "$0")/.."

. scripts/training_runs.sh
optimizers="adamw adamw-8bit adafactor lion lion-8bit sgd-momentum sgd"
factors="0.5 1 2"
args=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --optimizers) optimizers=${2//,/ }; shift 2 ;;
    --factors) factors=${2//,/ }; shift 2 ;;
    *) args+=("$1"); shift ;;
  esac
done
[[ " $factors " == *" 1 "* ]] || { echo "optimizer_quality.sh: --factors must list 1, the base" >&2; exit 2; }
[[ " $optimizers " == *" adamw "* ]] || { echo "optimizer_quality.sh: --optimizers must list adamw, the base" >&2; exit 2; }
parse_training_run_args optimizer_quality.sh ${args[@]+"${args[@]}"}
declare -A default_lr=([adamw]=2e-3 [adamw-8bit]=2e-3 [adafactor]=1e-3 [lion]=6e-4 [lion-8bit]=6e-4 [sgd-momentum]=0.1 [sgd]=0.25)

run() {  # optimizer lr -> "val_loss seconds"
  val_loss_and_seconds --optimizer "$1" --lr "$2"
}

echo "optimizer_quality.sh: $steps steps of make run's configuration; CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')" >&2
results=()
for optimizer in $optimizers; do
  lr=${default_lr[$optimizer]:?"optimizer_quality.sh: no default rate for $optimizer"}
  for factor in $factors; do
    rate=$(/usr/bin/python3 -c "print(f'{$lr * $factor:g}')")
    read -r loss seconds < <(run "$optimizer" "$rate")
    echo "  $optimizer lr $rate: validation loss $loss ($seconds s)" >&2
    results+=("$optimizer $rate $factor $loss $seconds")
  done
done

printf '%s\n' "${results[@]}" | /usr/bin/python3 -c '
import sys
rows = [line.split() for line in sys.stdin if line.strip()]
base = next(float(r[3]) for r in rows if r[0] == "adamw" and r[2] == "1")
print("| optimizer | lr | validation loss | against AdamW at 2e-3 |")
print("|---|---|---|---|")
for opt, rate, factor, loss, seconds in rows:
    loss = float(loss)
    print(f"| {opt} | {rate} | {loss:.4f} | {100 * (loss - base) / base:+.1f} % |")
'
