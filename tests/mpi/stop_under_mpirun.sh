#!/usr/bin/env bash
# A graceful stop under mpirun: SIGTERM sent to ONE rank's process (as a scheduler may, or a
# signal that reaches one node) stops all 3 ranks after the same step. The job exits 143,
# rank 0 saves and says where, and the run resumed under MPI ends with the bits of a run never
# stopped (the threads backend's, which the MPI backend equals: engine_matches_threads.sh),
# with every step once in loss.csv. Usage: stop_under_mpirun.sh path/to/zerodp
#
# The signal is sent once rank 0 has printed step 1 (so every rank has installed its handler);
# the run has 1000 steps to go, so only a test process stalled for seconds could miss it, and
# then the script says so.
set -euo pipefail
zerodp=$1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
gpt="--layers 1 --heads 2 --hidden 32 --seq-len 16 --micro-batch 2 --steps 1000"
hash_of() { grep -o '"weights_sha256": "[0-9a-f]*"' | cut -d'"' -f4; }

mpirun -np 3 --oversubscribe --allow-run-as-root "$zerodp" train $gpt --backend mpi \
  --log-every 1 --save-dir "$work/ck" --out "$work/out" >"$work/log" 2>"$work/err" &
job=$!
until grep -q 'step 1/1000' "$work/log"; do
  kill -0 $job 2>/dev/null || { echo "FAIL: the run ended before training"; cat "$work/err"; exit 1; }
  sleep 0.02
done
# The process of rank 2: a child of mpirun whose environment names it.
victim=
for pid in $(pgrep -P $job); do
  if tr '\0' '\n' <"/proc/$pid/environ" | grep -qx 'OMPI_COMM_WORLD_RANK=2'; then victim=$pid; fi
done
[ -n "$victim" ] || { echo "FAIL: no process of rank 2 under mpirun $job"; exit 1; }
kill -TERM "$victim"
status=0
wait $job || status=$?
line=$(grep -o 'zerodp: stopped by SIGTERM after step [0-9]* of 1000; checkpoint .*' "$work/log" || true)
if [ -z "$line" ] && grep -q 'step 1000/1000' "$work/log"; then
  echo "FAIL: the run finished before the signal reached it (a stalled test process)"; exit 1
fi
echo "mpirun exit status $status; $line"
[ "$status" = 143 ] || { echo "FAIL: expected exit status 143"; cat "$work/err"; exit 1; }
step=$(echo "$line" | sed 's/.*after step \([0-9]*\) of.*/\1/')
[ -f "$work/ck/step-$(printf %08d "$step")/manifest.json" ] || { echo "FAIL: no checkpoint of step $step"; exit 1; }
[ "$(tail -n +2 "$work/out/loss.csv" | cut -d, -f1 | tr '\n' ' ')" = "$(seq -s ' ' 1 "$step") " ] ||
  { echo "FAIL: loss.csv does not hold steps 1..$step"; exit 1; }

resumed=$(mpirun -np 3 --oversubscribe --allow-run-as-root "$zerodp" train $gpt --backend mpi \
  --resume "$work/ck" --out "$work/out" --json | hash_of)
never=$("$zerodp" train $gpt --ranks 3 --out "$work/never" --json | hash_of)
echo "resumed $resumed, never stopped $never"
[ -n "$never" ] && [ "$resumed" = "$never" ] || { echo "FAIL: the resumed run differs"; exit 1; }
cmp "$work/out/loss.csv" "$work/never/loss.csv" || { echo "FAIL: the loss history differs"; exit 1; }
echo "stopped at step $step on every rank, resumed to the same bits and the same loss.csv"
