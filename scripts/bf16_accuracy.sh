#!/usr/bin/env bash
# How much bf16 compute moves training: `make run`'s configuration (the default GPT, ZeRO-3 on
# 4 thread ranks, lr 2e-3, warm-up 20) trained --steps steps (default 300) three times:
#   fp32 compute, seed 1      the reference
#   fp32 compute, seed 2      the same run from other initial weights
#   bf16 compute, seed 1      the same run as the reference, with bf16 products
# and their validation losses (the mean over --eval-batches micro-batches of held-out windows,
# the same windows for all three).
#
# The margin is the seed pair's difference: bf16 compute passes when it moves the final
# validation loss no further from the reference than another initialisation of the same run
# does. Both are perturbations of one training trajectory that the optimisation should be
# indifferent to; a bf16 effect larger than the seed's is a cost a user would see. Exit status 1
# when bf16 is outside the margin. Not part of CI (three runs of about 6 minutes each on two
# cores); docs/performance.md has its figures.
#
#   scripts/bf16_accuracy.sh [--build DIR] [--steps N] [--eval-batches K]
set -euo pipefail
cd "$(dirname "$0")/.."

. scripts/training_runs.sh
parse_training_run_args bf16_accuracy.sh "$@"

run() {  # compute seed -> "val_loss seconds"
  val_loss_and_seconds --lr 2e-3 --compute "$1" --seed "$2"
}

echo "bf16_accuracy.sh: $steps steps of make run's configuration; CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')" >&2
read -r ref ref_s < <(run fp32 1)
echo "  fp32 compute, seed 1: validation loss $ref ($ref_s s)" >&2
read -r other other_s < <(run fp32 2)
echo "  fp32 compute, seed 2: validation loss $other ($other_s s)" >&2
read -r bf16 bf16_s < <(run bf16 1)
echo "  bf16 compute, seed 1: validation loss $bf16 ($bf16_s s)" >&2
/usr/bin/python3 - "$ref" "$other" "$bf16" <<'EOF'
import sys
ref, other, bf16 = map(float, sys.argv[1:])
margin, moved = abs(other - ref), abs(bf16 - ref)
verdict = "within" if moved <= margin else "OUTSIDE"
print(f"bf16 - fp32 = {bf16 - ref:+.4f} nats; another seed moves it {other - ref:+.4f}: "
      f"bf16 is {verdict} the margin of {margin:.4f}")
sys.exit(0 if moved <= margin else 1)
EOF
