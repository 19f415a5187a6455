# Shared by the scripts that train `make run`'s configuration several ways and compare the
# validation losses (bf16_accuracy.sh, optimizer_quality.sh); sourced, not run.
#
#   parse_training_run_args SCRIPT "$@"   reads [--build DIR] [--steps N] [--eval-batches K]
#                                         into $build, $steps, $eval_batches and $zerodp
#   val_loss_and_seconds FLAGS...         trains with FLAGS for $steps steps, validates once at
#                                         the end on $eval_batches micro-batches, prints
#                                         "VAL_LOSS SECONDS"

parse_training_run_args() {
  local script=$1
  shift
  build=build steps=300 eval_batches=20
  while [[ $# -gt 0 ]]; do
    case "$1" in
      --build) build="$2"; shift 2 ;;
      --steps) steps="$2"; shift 2 ;;
      --eval-batches) eval_batches="$2"; shift 2 ;;
      *) echo "$script: unknown argument $1 (see the comment at the top)" >&2; exit 2 ;;
    esac
  done
  zerodp="$build/zerodp"
  [[ -x "$zerodp" ]] || { echo "$script: no $zerodp: make build first" >&2; exit 2; }
}

val_loss_and_seconds() {
  "$zerodp" train --stage 3 --ranks 4 --steps "$steps" --warmup 20 "$@" \
    --eval-every "$steps" --eval-batches "$eval_batches" --out '' --json |
    /usr/bin/python3 -c 'import json, sys; j = json.load(sys.stdin); print(j["val_loss"], j["seconds"])'
}
