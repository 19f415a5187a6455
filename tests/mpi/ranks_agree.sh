#!/usr/bin/env bash
# Ranks that agree: MPI processes started with different settings or data all fail at once,
# every rank with the same line naming the first setting that differs and what each rank runs,
# instead of training on a mix. Usage: ranks_agree.sh path/to/zerodp
set -uo pipefail
zerodp=$1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
C="train --layers 1 --heads 2 --hidden 32 --seq-len 16 --steps 2 --out '' --json --backend mpi"

# Two MPI processes, one command line each; expects a failure whose output names $1.
expect_disagreement() {
  local want=$1 a=$2 b=$3
  eval "mpirun --oversubscribe --allow-run-as-root -np 1 $zerodp $a : -np 1 $zerodp $b" \
    >"$work/out" 2>"$work/err"
  local status=$?
  if [ $status -eq 0 ]; then echo "FAIL: ranks with different $want trained (exit 0)"; exit 1; fi
  local lines
  lines=$(grep -c "zerodp: ranks disagree on $want" "$work/err")
  if [ "$lines" -ne 2 ]; then
    echo "FAIL: expected the same line from both ranks naming $want, got:"; cat "$work/err"; exit 1
  fi
  echo "$want: exit $status, $(grep -m1 "ranks disagree" "$work/err")"
}

expect_disagreement "--seed" "$C" "$C --seed 2"
expect_disagreement "--lr" "$C" "$C --lr 1e-3"
expect_disagreement "--micro-batch" "$C --micro-batch 2" "$C --micro-batch 3"
grep -q "rank 0 runs 2, rank 1 runs 3" "$work/err" || { echo "FAIL: values not named"; exit 1; }
# The threads a rank computes on order its gradients' sums, and the record holds one count.
expect_disagreement "--threads" "$C --micro-batch 2 --threads 1" "$C --micro-batch 2 --threads 2"
M="measure --model gpt --layers 1 --heads 2 --hidden 32 --seq-len 16 --steps 1 --backend mpi"
expect_disagreement "--threads" "$M --threads 1" "$M --threads 2"

# Three processes: the ranks that agree with each other are named together.
mpirun --oversubscribe --allow-run-as-root -np 2 $zerodp train --layers 1 --heads 2 --hidden 32 \
  --seq-len 16 --steps 2 --out '' --backend mpi : -np 1 $zerodp train --layers 1 --heads 2 \
  --hidden 32 --seq-len 16 --steps 2 --out '' --backend mpi --seed 2 >/dev/null 2>"$work/err"
[ "$(grep -c "zerodp: ranks disagree on --seed: ranks 0, 1 run 1, rank 2 runs 2" "$work/err")" -eq 3 ] ||
  { echo "FAIL: three ranks, expected one line each grouping ranks 0, 1:"; cat "$work/err"; exit 1; }
echo "three ranks: $(grep -m1 "ranks disagree" "$work/err")"

# Data of the same size and path, other bytes: told apart by their fingerprint.
mkdir -p "$work/a" "$work/b"
python3 -c "import sys; open(sys.argv[1],'w').write('the quick brown fox jumps over the lazy dog. ' * 40)" "$work/a/text"
python3 -c "import sys; open(sys.argv[1],'w').write('THE QUICK BROWN FOX JUMPS OVER THE LAZY DOG. ' * 40)" "$work/b/text"
expect_disagreement "--data" "$C --data $work/a/text" "$C --data $work/b/text"
# The same bytes at two paths are the same data.
cp "$work/a/text" "$work/b/same"
mpirun --oversubscribe --allow-run-as-root -np 1 $zerodp train --layers 1 --heads 2 --hidden 32 \
  --seq-len 16 --micro-batch 2 --steps 2 --out '' --json --backend mpi --data "$work/a/text" : \
  -np 1 $zerodp train --layers 1 --heads 2 --hidden 32 --seq-len 16 --micro-batch 2 --steps 2 \
  --out '' --json --backend mpi --data "$work/b/same" >/dev/null 2>"$work/err" ||
  { echo "FAIL: the same bytes at another path were refused:"; cat "$work/err"; exit 1; }
echo "the same bytes at another path: ok"

# measure shares the engine flags.
M="measure --params 4224 --steps 1 --json --backend mpi"
expect_disagreement "--stage" "$M --stage 1" "$M --stage 2"
# ... and its own settings: the model's size.
M="measure --steps 1 --json --backend mpi"
expect_disagreement "--params" "$M --params 4224" "$M --params 8448"

# A resume the ranks cannot split fails the same way on every rank: a global batch of 4
# (2 ranks x micro-batch 2) on 3 processes.
G="train --layers 1 --heads 2 --hidden 32 --seq-len 16 --micro-batch 2 --out ''"
eval "$zerodp $G --ranks 2 --steps 4 --save-every 2 --save-dir $work/ck" >/dev/null
eval "mpirun --oversubscribe --allow-run-as-root -np 3 $zerodp $G --steps 6 --backend mpi \
  --resume $work/ck" >/dev/null 2>"$work/err"
[ "$(grep -c "zerodp: --ranks: the checkpoint .* 3 ranks cannot split it evenly; resume on 1, 2, 4 ranks" "$work/err")" -eq 3 ] ||
  { echo "FAIL: expected the same refusal from the three ranks:"; cat "$work/err"; exit 1; }
echo "resume on 3 processes: $(grep -m1 "zerodp: --ranks" "$work/err")"

# A link to replay the step on needs ranks on more than one host: every rank ends with the same
# one line, exit 2, before measuring.
mpirun --oversubscribe --allow-run-as-root -np 2 $zerodp measure --params 4224 --steps 1 \
  --backend mpi --link-rate 1gbit >/dev/null 2>"$work/err"
status=$?
[ $status -ne 0 ] && [ "$(grep -c "zerodp: --link-rate: all 2 ranks are on one host" "$work/err")" -eq 2 ] ||
  { echo "FAIL: --link-rate on one host: expected the line from both ranks, exit $status:"; cat "$work/err"; exit 1; }
echo "--link-rate on one host: $(grep -m1 "link-rate" "$work/err")"
