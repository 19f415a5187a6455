#!/usr/bin/env bash
# The planner's peak against the ledger under mpirun, where the MPI backend's reduction staging
# (comm_buffers) is part of every rank's peak: measure's per-rank peak equals the prediction to
# the byte for both models at every stage, and a rank given one byte less than its predicted
# peak ends the run on every process with exit 1 and the one-line refusal, while the predicted
# peak itself trains. Usage: peak_under_mpirun.sh path/to/zerodp
set -euo pipefail
zerodp=$1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
mpi() { mpirun -np 3 --oversubscribe --allow-run-as-root "$zerodp" "$@" --backend mpi; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

gpt="--model gpt --layers 2 --heads 2 --hidden 32 --seq-len 16 --micro-batch 2"
# Small buckets and segments: several segments per chunk, uneven shards.
small="--bucket-bytes 6KiB"
mpi measure $gpt $small --all-stages --steps 1 --json > "$work/gpt.json"
mpi measure --params 40000 $small --all-stages --steps 1 --json > "$work/mlp.json"
python3 - "$work/gpt.json" "$work/mlp.json" <<'PY'
import json, sys
for path in sys.argv[1:]:
    for st in json.load(open(path))["stages"]:
        assert st["predicted"]["peak_bytes"] == st["per_rank"][0]["peak_bytes"], st["predicted"]
        for r in st["per_rank"]:
            assert r["peak_bytes"] == r["predicted_peak_bytes"], (st["stage"], r)
            assert r["at_peak_bytes"] == r["predicted_at_peak_bytes"], (st["stage"], r)
            assert r["at_peak_bytes"]["comm_buffers"] > 0, r
print("peak under MPI: ledger == prediction on every rank, both models, stages 0-3")
PY

train="$gpt $small --stage 3 --steps 2 --eval-batches 0 --out $work/out"
peak=$("$zerodp" train $train --ranks 3 --backend mpi --dry-run --json |
       python3 -c 'import json,sys; print(json.load(sys.stdin)["predicted_peak_bytes"])')
mpi train $train --rank-memory "${peak}B" > "$work/fits.txt"
grep -q "peak per rank" "$work/fits.txt"
set +e
mpi train $train --rank-memory "$((peak - 1))B" > "$work/refused.txt" 2>&1
status=$?
set -e
cat "$work/refused.txt"
[ "$status" = 1 ] || { echo "FAIL: a budget one byte short exited $status, not 1"; exit 1; }
grep -q "above its memory budget of $((peak - 1)) B" "$work/refused.txt" ||
  { echo "FAIL: no refusal line"; exit 1; }
echo "budget under MPI: the predicted peak trains, one byte less is refused (exit 1)"
