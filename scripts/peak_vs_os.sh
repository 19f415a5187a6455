#!/usr/bin/env bash
# The ledger's peak against the kernel's: under mpirun (one rank per process), each process's
# peak resident set (VmHWM) minus that of a tiny run of the same command (the runtime: MPI,
# OpenBLAS, the program) against the ledger's peak and the planner's prediction, for stages 0
# and 3. Output: docs/memory.md. Usage: scripts/peak_vs_os.sh [build] [params] [ranks]
set -euo pipefail
build=${1:-build}
params=${2:-50M}
ranks=${3:-4}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
measure() {  # measure PARAMS STAGE
  mpirun -np "$ranks" --oversubscribe --allow-run-as-root "$build/zerodp" measure --backend mpi \
    --params "$1" --stage "$2" --steps 1 --json > "$work/$1-$2.json"
}
for stage in 0 3; do
  measure 10K $stage
  measure "$params" $stage
done
python3 - "$work" "$params" <<'PY'
import json, sys
work, params = sys.argv[1], sys.argv[2]
print(f"{'stage':>5} {'rank':>4} {'predicted':>13} {'ledger peak':>13} {'VmHWM':>13} "
      f"{'VmHWM - tiny':>13} {'OS / ledger':>11}")
peaks = {}
for stage in (0, 3):
    tiny = json.load(open(f"{work}/10K-{stage}.json"))["per_rank"]
    big = json.load(open(f"{work}/{params}-{stage}.json"))["per_rank"]
    for t, b in zip(tiny, big):
        os_peak = b["rss_peak_bytes"] - t["rss_peak_bytes"]
        peaks.setdefault(stage, []).append((b["peak_bytes"], os_peak))
        print(f"{stage:>5} {b['rank']:>4} {b['predicted_peak_bytes']:>13,} {b['peak_bytes']:>13,} "
              f"{b['rss_peak_bytes']:>13,} {os_peak:>13,} {os_peak / b['peak_bytes']:>11.4f}")
ledger = peaks[0][0][0] / peaks[3][0][0]
os_ratio = peaks[0][0][1] / peaks[3][0][1]
print(f"stage 0 / stage 3, rank 0: ledger {ledger:.2f}x, OS {os_ratio:.2f}x, model state 4.00x")
PY
