#!/usr/bin/env bash
# The seed's cell G on a real link, measured beside the planner's replay. Not part of CI: the
# figures are times on a shared machine, so this prints them rather than passing or failing.
#
#   scripts/bench_cluster_efficiency.sh [--build DIR] [--rounds R] [--rate RATE] [--stages "0 3"]
#
# A stage may be 3+ZEROPP (3+qwz, 3+qwz,hpz,qgz, ...): ZeRO-3 with ZeRO++ (--zeropp ZEROPP,
# docs/zeropp.md; one rank per host, so hpZ's hosts are single ranks), at ZeRO-3's micro-batch,
# so they compare step for step.
#
# 2 hosts (scripts/cluster.sh: network namespaces, veth, TCP, a tbf shaper at RATE, default
# 200mbit), one rank each, a 2.1M-parameter MLP, 9 measured steps. ZeRO-0 runs at micro-batch
# 256 and ZeRO-3 at 384 (stages 1 and 2 at 256), where compute and link time per step are about
# equal. `measure` times the steps with overlap and prefetch and without, and replays each
# measured step on the link with the planner (predict/schedule.h: the engine's own schedule, fed
# every rank's compute as measured). Each round runs every stage once; the table gives, per
# stage, the median over rounds of measured and replayed efficiency with and without overlap,
# and the largest gap between them seen in any round. Needs root (namespaces) and the release
# build (make build).
set -euo pipefail
cd "$(dirname "$0")/.."

build=build rounds=3 rate=200mbit stages="0 3"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --build) build="$2"; shift 2 ;;
    --rounds) rounds="$2"; shift 2 ;;
    --rate) rate="$2"; shift 2 ;;
    --stages) stages="$2"; shift 2 ;;
    *) echo "usage: $0 [--build DIR] [--rounds R] [--rate RATE] [--stages \"0 3\"]" >&2; exit 2 ;;
  esac
done
[[ "$rounds" =~ ^[1-9][0-9]*$ ]] || { echo "--rounds: expected a whole number >= 1, got '$rounds'" >&2; exit 2; }
zerodp="$build/zerodp"
[ -x "$zerodp" ] || { echo "$zerodp: not built (make build)" >&2; exit 2; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for round in $(seq "$rounds"); do
  for stage in $stages; do
    micro=256 zeropp=none
    case "$stage" in
      3) micro=384 ;;
      3+*) micro=384 zeropp=${stage#3+} ;;  # zerodp names a bad list itself
      0|1|2) ;;
      *) echo "--stages: expected 0, 1, 2, 3 or 3+ZEROPP such as 3+qwz,hpz,qgz, got '$stage'" >&2
         exit 2 ;;
    esac
    if ! ZERODP="$zerodp" scripts/cluster.sh --hosts 2 --rate "$rate" -- measure --params 2M \
        --stage "${stage%%+*}" --zeropp "$zeropp" --micro-batch "$micro" --steps 9 --json \
        > "$work/$stage.$round.json" 2> "$work/err"; then
      cat "$work/err" >&2
      exit 1
    fi
  done
done

cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
python3 - "$work" "$rounds" "$cpu" $stages <<'PY'
import json, statistics, sys
work, rounds, cpu, stages = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4:]
print(f"CPU: {cpu}; {rounds} round(s); medians over rounds, largest gap of any round")
print("| stage | overlap | step, measured | step, replayed | efficiency, measured | replayed | largest gap |")
print("|---|---|---|---|---|---|---|")
for stage in stages:
    runs = [json.load(open(f"{work}/{stage}.{r}.json"))["timing"] for r in range(1, rounds + 1)]
    name = (f"ZeRO-{stage}".replace("+", " + ").replace("qwz", "qwZ").replace("hpz", "hpZ")
            .replace("qgz", "qgZ"))
    for label, key in (("overlap + prefetch", ""), ("none", "_no_overlap")):
        measured = [t["efficiency" + key] for t in runs]
        replayed = [t["predicted_efficiency" + key] for t in runs]
        step = [t["step_seconds" + key] for t in runs]
        replayed_step = [t["predicted_step_seconds" + key] for t in runs]
        gap = max(abs(m - p) for m, p in zip(measured, replayed))
        print(f"| {name} | {label} | {statistics.median(step):.3f} s "
              f"| {statistics.median(replayed_step):.3f} s "
              f"| {statistics.median(measured):.1%} | {statistics.median(replayed):.1%} "
              f"| {gap * 100:.1f} points |")
PY
