#!/usr/bin/env bash
# A host cut mid-run: 2 hosts (scripts/cluster.sh), host 1's link taken down 3 s after the
# start of a long run with --timeout 5s. The job must end (never hang) with an error naming
# the peer that stopped answering, well within a minute. Exit 77 (skipped) where namespaces
# cannot be made. Usage: host_cut.sh path/to/zerodp
set -euo pipefail
zerodp=$1
here=$(cd "$(dirname "$0")/../.." && pwd)
log=$(mktemp)
trap 'rm -f "$log"' EXIT
start=$(date +%s)
set +e
ZERODP="$zerodp" timeout 120 "$here/scripts/cluster.sh" --hosts 2 --cut 1@3 -- \
  train --model mlp --params 1M --steps 1000000 --timeout 5s --out '' --log-every 100000 \
  > "$log" 2>&1
status=$?
set -e
elapsed=$(($(date +%s) - start))
grep -v '^\[' "$log" | head -20
[ $status = 77 ] && exit 77
[ $status != 124 ] || { echo "FAIL: the job hung (killed after 120 s)"; exit 1; }
[ $status != 0 ] || { echo "FAIL: the job ended with status 0 after its host was cut"; exit 1; }
grep -Eq "rank [01] did not (arrive|complete the transfer) \(rank [01] is on host zerodp-h[01]\)" "$log" ||
  { echo "FAIL: no error naming the peer and its host"; exit 1; }
[ "$elapsed" -le 60 ] || { echo "FAIL: the job took $elapsed s to end"; exit 1; }
echo "host cut: the job ended after $elapsed s (status $status), naming the peer"
