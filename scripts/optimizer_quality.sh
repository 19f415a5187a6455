#!/usr/bin/env bash
# What each optimizer the engine runs gives for the same training: `make run`'s configuration
# (the default GPT, ZeRO-3 on 4 thread ranks, warm-up 20) trained --steps steps (default 300)
# with each of adamw, lion, sgd-momentum and sgd, at its default learning rate and at half and
# twice that (a rate tuned for AdamW is not one for SGD), and the validation loss of each run
# (the mean over --eval-batches micro-batches of held-out windows, the same windows for all).
# Each run is set against AdamW's at its default rate. The losses do not depend on the machine's
# load (the runs are deterministic); the step's own time is bench/bench_optim's to measure.
#
# Not part of CI (twelve runs of about a minute each on two cores with bf16 compute);
# docs/performance.md has its figures.
#
#   scripts/optimizer_quality.sh [--build DIR] [--steps N] [--eval-batches K]
set -euo pipefail
cd "$(dirname "$0")/.."

. scripts/training_runs.sh
parse_training_run_args optimizer_quality.sh "$@"

run() {  # optimizer lr -> "val_loss seconds"
  val_loss_and_seconds --optimizer "$1" --lr "$2"
}

echo "optimizer_quality.sh: $steps steps of make run's configuration; CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')" >&2
results=()
for spec in adamw:2e-3 lion:6e-4 sgd-momentum:0.1 sgd:0.25; do
  optimizer=${spec%%:*} lr=${spec#*:}
  for factor in 0.5 1 2; do
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
