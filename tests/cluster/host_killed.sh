#!/usr/bin/env bash
# A host's processes killed mid-run: 2 hosts (scripts/cluster.sh), host 1's zerodp killed
# (SIGKILL) 3 s into a long run with --timeout 5s. The job must end (never hang), non-zero,
# with a line naming the lost rank and its host — today Open MPI's ("process rank 1 ... on
# node 10.213.0.2 exited on signal 9"): mpirun ends the job before a collective times out.
# Exit 77 (skipped) where namespaces cannot be made. Usage: host_killed.sh path/to/zerodp
set -euo pipefail
zerodp=$1
here=$(cd "$(dirname "$0")/../.." && pwd)
log=$(mktemp)
trap 'rm -f "$log"' EXIT
start=$(date +%s)
set +e
ZERODP="$zerodp" timeout 120 "$here/scripts/cluster.sh" --hosts 2 --kill 1@3 -- \
  train --model mlp --params 1M --steps 1000000 --timeout 5s --out '' --log-every 100000 \
  > "$log" 2>&1
status=$?
set -e
elapsed=$(($(date +%s) - start))
grep -E "zerodp|rank 1" "$log" | head -10
[ $status = 77 ] && exit 77
[ $status != 124 ] || { echo "FAIL: the job hung (killed after 120 s)"; exit 1; }
[ $status != 0 ] || { echo "FAIL: the job ended with status 0 after a host's processes died"; exit 1; }
grep -Eq "rank 1 .*(10\.213\.0\.2|zerodp-h1)" "$log" ||
  { echo "FAIL: no line naming rank 1 and its host"; exit 1; }
[ "$elapsed" -le 60 ] || { echo "FAIL: the job took $elapsed s to end"; exit 1; }
echo "host killed: the job ended after $elapsed s (status $status), naming rank 1 and its host"
