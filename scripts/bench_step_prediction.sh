#!/usr/bin/env bash
# The engine's step predicted before it runs, against the step measured: stages, ZeRO++, 1 to 4
# hosts and three link rates. Not part of CI: the figures are times on a shared machine, so this
# prints them rather than passing or failing.
#
#   scripts/bench_step_prediction.sh [--build DIR] [--rates "50mbit 200mbit 1gbit"]
#                                    [--hosts "1 2 3 4"] [--stages "0 1 2 3 3+qwz,hpz,qgz"]
#                                    [--steps S] [--micro-batch B]
#
# Each run is `scripts/cluster.sh --hosts H --rate R -- measure --params 2M --stage S --steps 9
# --micro-batch 256 --json`: one rank a host (network namespaces, veth, TCP, a tbf shaper at R),
# a 2.1M-parameter MLP. `measure` first times each rank's kernels on one rank without
# communication, alone and beside a stream of all-gathers on the link (predict::KernelRates),
# predicts the step from each unit's FLOPs at those rates through the engine's schedule on the
# link (predict/schedule.h), then measures the step with overlap and prefetch and without.
# One host runs once (no link to shape). A stage may be 3+ZEROPP (--zeropp ZEROPP, hosts >= 2).
# Prints one row per run and the median and largest |error| of each column. Needs root
# (namespaces) and the release build (make build).
set -euo pipefail
cd "$(dirname "$0")/.."

build=build rates="50mbit 200mbit 1gbit" hosts="1 2 3 4" stages="0 1 2 3 3+qwz,hpz,qgz"
steps=9 micro=256
usage() {
  echo "usage: $0 [--build DIR] [--rates \"R ...\"] [--hosts \"H ...\"] [--stages \"S ...\"] [--steps S] [--micro-batch B]" >&2
  exit 2
}
while [[ $# -gt 0 ]]; do
  case "$1" in
    --build) build="$2"; shift 2 ;;
    --rates) rates="$2"; shift 2 ;;
    --hosts) hosts="$2"; shift 2 ;;
    --stages) stages="$2"; shift 2 ;;
    --steps) steps="$2"; shift 2 ;;
    --micro-batch) micro="$2"; shift 2 ;;
    *) usage ;;
  esac
done
for h in $hosts; do
  [[ "$h" =~ ^[1-9][0-9]*$ ]] || { echo "--hosts: expected whole numbers >= 1, got '$h'" >&2; exit 2; }
done
zerodp="$build/zerodp"
[ -x "$zerodp" ] || { echo "$zerodp: not built (make build)" >&2; exit 2; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
runs=()
for h in $hosts; do
  for rate in $rates; do
    for stage in $stages; do
      zeropp=none
      case "$stage" in
        0|1|2|3) ;;
        3+*) zeropp=${stage#3+}; [ "$h" -ge 2 ] || continue ;;
        *) echo "--stages: expected 0, 1, 2, 3 or 3+ZEROPP such as 3+qwz,hpz,qgz, got '$stage'" >&2
           exit 2 ;;
      esac
      shaped=(--rate "$rate")
      [ "$h" -ge 2 ] || shaped=()  # one host: nothing crosses a link
      out="$work/$h.$rate.$stage.json"
      if ! ZERODP="$zerodp" scripts/cluster.sh --hosts "$h" "${shaped[@]}" -- measure --params 2M \
          --stage "${stage%%+*}" --zeropp "$zeropp" --micro-batch "$micro" --steps "$steps" \
          --json > "$out" 2> "$work/err"; then
        cat "$work/err" >&2
        exit 1
      fi
      runs+=("$h $rate $stage $out")
    done
    [ "$h" -ge 2 ] || break  # one host: one rate
  done
done

cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
printf '%s\n' "${runs[@]}" > "$work/runs"
python3 - "$cpu" "$work/runs" <<'PY'
import json, statistics, sys
cpu, runs = sys.argv[1], sys.argv[2]
print(f"CPU: {cpu}; one run each; error = predicted / measured - 1")
print("| hosts | link | stage | step, measured | predicted | error | no overlap, measured "
      "| predicted | error | pace beside the link | link's pace beside compute |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
errors, errors_sync = [], []
for line in open(runs):
    h, rate, stage, path = line.split()
    t = json.load(open(path))["timing"]
    p = t["predicted_from_rates"]
    name = (f"ZeRO-{stage}".replace("+", " + ").replace("qwz", "qwZ").replace("hpz", "hpZ")
            .replace("qgz", "qgZ"))
    link = rate if int(h) > 1 else "-"
    e, es = p["step_error"], p["step_error_no_overlap"]
    errors.append(abs(e))
    errors_sync.append(abs(es))
    print(f"| {h} | {link} | {name} | {t['step_seconds'] * 1e3:.0f} ms "
          f"| {p['step_seconds'] * 1e3:.0f} ms | {e:+.1%} "
          f"| {t['step_seconds_no_overlap'] * 1e3:.0f} ms "
          f"| {p['step_seconds_no_overlap'] * 1e3:.0f} ms | {es:+.1%} "
          f"| {t['kernel_rates']['beside_link']:.2f} "
          f"| {t['kernel_rates']['link_beside_compute']:.2f} |")
print()
print(f"overlap + prefetch: median |error| {statistics.median(errors):.1%}, "
      f"largest {max(errors):.1%} over {len(errors)} runs")
print(f"no overlap:         median |error| {statistics.median(errors_sync):.1%}, "
      f"largest {max(errors_sync):.1%} over {len(errors_sync)} runs")
print(f"within 10 %: {sum(e <= 0.1 for e in errors)} of {len(errors)} with overlap, "
      f"{sum(e <= 0.1 for e in errors_sync)} without")
PY
