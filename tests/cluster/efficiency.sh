#!/usr/bin/env bash
# The seed's cell G on a real link: 2 hosts (scripts/cluster.sh) joined at 200 Mbit/s, one rank
# each. `measure` times the steps with overlap and prefetch and without, and replays each
# measured step on the link with the planner (plan_schedule.h: the engine's own schedule, fed
# every rank's compute as measured). Predicted and measured efficiency must agree within 5
# points, with and without overlap, at ZeRO-0 (micro-batch 256) and ZeRO-3 (micro-batch 384),
# where the link carries 0.18 s and 0.26 s a step against about as much compute. Exit 77
# (skipped) where namespaces cannot be made. Usage: efficiency.sh path/to/zerodp
set -euo pipefail
zerodp=$1
here=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for run in "0 256" "3 384"; do
  set -- $run
  set +e
  ZERODP="$zerodp" "$here/scripts/cluster.sh" --hosts 2 --rate 200mbit -- measure --params 2M \
    --stage "$1" --micro-batch "$2" --steps 9 --json > "$work/$1.json" 2> "$work/err"
  status=$?
  set -e
  if [ $status = 77 ]; then cat "$work/err"; exit 77; fi
  [ $status = 0 ] || { cat "$work/err"; echo "FAIL: cluster measure exited $status"; exit 1; }
done
python3 - "$work/0.json" "$work/3.json" <<'PY'
import json, sys
failed = False
for path in sys.argv[1:]:
    j = json.load(open(path))
    t = j["timing"]
    assert t["link"]["rate_bits_per_second"] == 200e6, t["link"]
    for label, key in (("overlap + prefetch", ""), ("no overlap", "_no_overlap")):
        measured, predicted = t["efficiency" + key], t["predicted_efficiency" + key]
        ok = abs(measured - predicted) <= 0.05
        failed |= not ok
        print(f"ZeRO-{j['stage']}, {label}: efficiency measured {measured:.1%}, "
              f"predicted {predicted:.1%}{'' if ok else '  <- more than 5 points apart'}")
sys.exit(1 if failed else 0)
PY
