#!/usr/bin/env bash
# Faults on the wire lose no data, on hosts made by scripts/cluster.sh:
#   loss     10 % of every host's packets dropped: TCP resends them, and the run ends with the
#            same weights, bit for bit, as without loss;
#   resume   host 1's link cut mid-run (--timeout 5s): the job ends naming the peer; resumed
#            from its --save-dir on a whole link, it ends with the weights of a run never cut.
# Exit 77 (skipped) where namespaces cannot be made. Usage: faults_keep_bits.sh path/to/zerodp
set -euo pipefail
zerodp=$1
here=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# cluster NAME CLUSTER_FLAGS... -- TRAIN_FLAGS...: runs, keeps the output, returns the status.
cluster() {
  local name=$1
  shift
  set +e
  ZERODP="$zerodp" timeout 180 "$here/scripts/cluster.sh" "$@" > "$work/$name.out" 2>&1
  local status=$?
  set -e
  [ $status = 77 ] && { cat "$work/$name.out"; exit 77; }
  [ $status != 124 ] || { tail -5 "$work/$name.out"; echo "FAIL: $name hung (killed after 180 s)"; exit 1; }
  return $status
}
weights() { grep -o '"weights_sha256": "[0-9a-f]*"' "$work/$1.out" | cut -d'"' -f4; }

T="train --model mlp --params 1M --stage 3 --out '' --json --timeout 20s"
cluster clean --hosts 2 -- $T --steps 8 || { cat "$work/clean.out"; echo "FAIL: the run without loss"; exit 1; }
cluster lossy --hosts 2 --loss 0.1 -- $T --steps 8 || { tail -5 "$work/lossy.out"; echo "FAIL: the run with 10 % loss did not finish"; exit 1; }
[ -n "$(weights clean)" ] && [ "$(weights clean)" = "$(weights lossy)" ] ||
  { echo "FAIL: 10 % loss changed the weights: $(weights clean) vs $(weights lossy)"; exit 1; }
echo "10 % packet loss: the same weights as without, $(weights lossy | cut -c1-16)..."

R="train --model mlp --params 1M --stage 2 --steps 60 --out '' --json --timeout 5s --save-every 5"
cluster whole --hosts 2 --rate 200mbit -- $R --save-dir "$work/whole" ||
  { cat "$work/whole.out"; echo "FAIL: the run without a cut"; exit 1; }
# The link goes down half a second after the first checkpoint, not at a time from the start: on
# a loaded machine the start (mpirun, the hosts' daemons) alone can take seconds.
if cluster cut --hosts 2 --rate 200mbit --cut 1@0.5 --after "$work/cut/step-00000005" \
  -- $R --save-dir "$work/cut"; then
  echo "FAIL: the run whose link was cut ended with status 0"; exit 1
fi
grep -Eq 'rank 1 did not (arrive|complete the transfer) \(rank 1 is on host zerodp-h1\)' "$work/cut.out" ||
  { cat "$work/cut.out"; echo "FAIL: no line naming rank 1 and its host"; exit 1; }
from=$(ls "$work/cut" | grep '^step-' | tail -1 || true)
[ -n "$from" ] || { cat "$work/cut.out"; echo "FAIL: no checkpoint was saved before the cut"; exit 1; }
[ "$from" != step-00000060 ] || { echo "FAIL: the run ended before its link was cut"; exit 1; }
cluster resumed --hosts 2 --rate 200mbit -- $R --save-dir "$work/cut" --resume "$work/cut" ||
  { cat "$work/resumed.out"; echo "FAIL: the resumed run"; exit 1; }
[ "$(weights whole)" = "$(weights resumed)" ] ||
  { echo "FAIL: resumed after the cut: $(weights resumed), never cut: $(weights whole)"; exit 1; }
echo "cut, then resumed from $from: the weights of a run never cut, $(weights whole | cut -c1-16)..."
