#!/usr/bin/env bash
# zerodp against PyTorch on the GPT benchmark configuration, side by side in one run, with the
# issue's ratios. Not part of CI. Needs the bench built (cmake --build BUILD --target
# bench_gpt_train) and Debian's python3-torch (apt-get install -y python3-torch).
#
#   scripts/bench_speed.sh [--build DIR] [--rounds R] [--wall] [--quiet P] [--out FILE]
#                          [--autocast auto|yes|no]
#
# Two environments, one after the other: the environment as it is, then the same command with
# OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE unset for that command alone (env -u), zerodp and
# PyTorch alike. In each, R rounds (default 3); a round runs zerodp's four configurations
# (stage 0 at N = 1; stages 0, 1, 3 at N = 2) and then PyTorch's three (1 process x 2 threads;
# DDP 2 x 1; DDP + ZeroRedundancyOptimizer 2 x 1), each the median of 3 blocks of 5 steps after
# 3 warm-up steps. With the bf16 autocast peers (--autocast yes; auto, the default: where the
# CPU has AVX512-BF16 or AMX-BF16, since elsewhere PyTorch's bf16 products have no fast kernel
# and would only lengthen the run), each round also runs PyTorch's three modes under
# torch.autocast("cpu", dtype=torch.bfloat16), and zerodp runs its four configurations again
# with --compute bf16 (oneDNN's bf16 matmul where the CPU multiplies bf16): the autocast ratios
# and a bf16 "stage 3 / stage 0" are taken on those, the fp32 ratios on the fp32 runs (which the
# goals ask to hold in every round). A ratio is taken inside each round, where both sides ran
# minutes apart
# under the same load, and the median over rounds is printed with its range; beside it, the
# ratio of the two sides' fastest blocks over all rounds (the least disturbed). A goal is "met"
# when both clear it, "NOT met" when neither does, "unclear" otherwise; ", every round" when
# the lowest round clears it too.
#
# Time: process CPU time by default (see bench_gpt_train.cc and bench_pytorch.py: the larger of
# CPU time over the cores used and the busiest thread), since the machine may be shared;
# --wall for wall-clock time on an idle machine. --quiet P waits before each measurement (up
# to 10 minutes) until the CPU pressure stall figure (/proc/pressure/cpu, "some avg10", in %)
# has stayed below P for three checks 2 s apart, and records what it saw. Every JSON line goes
# to --out (default bench_speed.jsonl in the current folder).
set -euo pipefail
cd "$(dirname "$0")/.."

build=build rounds=3 clock=--cpu out=bench_speed.jsonl quiet= autocast=auto
while [[ $# -gt 0 ]]; do
  case "$1" in
    --build) build="$2"; shift 2 ;;
    --rounds) rounds="$2"; shift 2 ;;
    --wall) clock=""; shift ;;
    --out) out="$2"; shift 2 ;;
    --quiet) quiet="$2"; shift 2 ;;
    --autocast) autocast="$2"; shift 2 ;;
    *) echo "bench_speed.sh: unknown argument '$1' (expected --build DIR, --rounds R, --wall, --quiet P, --out FILE, --autocast auto|yes|no)" >&2; exit 2 ;;
  esac
done
[[ "$rounds" =~ ^[1-9][0-9]*$ ]] || { echo "bench_speed.sh: --rounds: expected a whole number >= 1, got '$rounds'" >&2; exit 2; }
case "$autocast" in
  yes|no) ;;
  auto) if grep -qwE 'avx512_bf16|amx_bf16' /proc/cpuinfo; then autocast=yes; else autocast=no; fi ;;
  *) echo "bench_speed.sh: --autocast: expected auto, yes or no, got '$autocast'" >&2; exit 2 ;;
esac
bench="$build/bench/bench_gpt_train"
if [[ ! -x "$bench" ]]; then
  echo "bench_speed.sh: $bench not found: build it with cmake --build $build --target bench_gpt_train" >&2
  exit 1
fi
if ! /usr/bin/python3 -c 'import torch' 2>/dev/null; then
  echo "bench_speed.sh: PyTorch is missing: apt-get install -y python3-torch" >&2
  exit 1
fi

pressure() { awk '/^some/ { split($2, a, "="); print a[2] }' /proc/pressure/cpu 2>/dev/null || echo nan; }
wait_quiet() {  # prints the pressure it ended with
  [[ -z "$quiet" ]] && { pressure; return; }
  local ok=0 t0=$SECONDS p
  while ((SECONDS - t0 < 600)); do
    p=$(pressure)
    if awk "BEGIN { exit !($p < $quiet) }"; then ok=$((ok + 1)); else ok=0; fi
    ((ok >= 3)) && break
    sleep 2
  done
  pressure
}
: > "$out"
run_env() {  # $1: label; the rest: the env prefix of the commands
  local label="$1"; shift
  local p
  for ((r = 1; r <= rounds; ++r)); do
    p=$(wait_quiet)
    echo "[$label] round $r/$rounds: zerodp (cpu pressure avg10 $p %)" >&2
    "$@" "$bench" --json $clock --configs 0:1,0:2,1:2,3:2 --repeats 3 --steps 5 --warmup 3 |
      sed "s/^{/{\"env\": \"$label\", \"round\": $r, \"impl\": \"zerodp\", \"pressure\": $p, /" >> "$out"
    if [[ "$autocast" == yes ]]; then
      p=$(wait_quiet)
      echo "[$label] round $r/$rounds: zerodp --compute bf16 (cpu pressure avg10 $p %)" >&2
      "$@" "$bench" --json $clock --compute bf16 --configs 0:1,0:2,1:2,3:2 --repeats 3 --steps 5 --warmup 3 |
        sed "s/^{/{\"env\": \"$label\", \"round\": $r, \"impl\": \"zerodp\", \"pressure\": $p, /" >> "$out"
      echo "[$label] round $r/$rounds: the kernels alone (bench_gemm)" >&2
      "$@" "$build/bench/bench_gemm" --json --rounds 1 --seconds 5 |
        sed "s/^{/{\"env\": \"$label\", \"round\": $r, \"impl\": \"gemm\", /" >> "$out"
    fi
    p=$(wait_quiet)
    echo "[$label] round $r/$rounds: PyTorch (cpu pressure avg10 $p %)" >&2
    "$@" /usr/bin/python3 scripts/bench_pytorch.py --json $clock --repeats 3 --steps 5 --warmup 3 |
      sed "s/^{/{\"env\": \"$label\", \"round\": $r, \"impl\": \"torch\", \"pressure\": $p, /" >> "$out"
    if [[ "$autocast" == yes ]]; then
      p=$(wait_quiet)
      echo "[$label] round $r/$rounds: PyTorch with bf16 autocast (cpu pressure avg10 $p %)" >&2
      "$@" /usr/bin/python3 scripts/bench_pytorch.py --json $clock --autocast --repeats 3 --steps 5 --warmup 3 |
        sed "s/^{/{\"env\": \"$label\", \"round\": $r, \"impl\": \"torch\", \"pressure\": $p, /" >> "$out"
    fi
  done
}
run_env as-is env
run_env unset env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE

/usr/bin/python3 - "$out" <<'EOF'
import json, statistics, sys

rows = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
def pick(env, rnd, impl, **kv):
    for r in rows:
        if r["env"] == env and r["round"] == rnd and r["impl"] == impl and all(r.get(k) == v for k, v in kv.items()):
            return r
    raise SystemExit(f"bench_speed.sh: no result for {env} round {rnd} {impl} {kv}")

goals = [  # (label, zerodp side, other side, goal)
    ("stage 0 N=1 / PyTorch 1 process x 2", ("zerodp", dict(stage=0, ranks=1, compute="fp32")), ("torch", dict(mode="single", autocast="none")), 1.5),
    ("stage 0 N=2 / DDP 2 x 1", ("zerodp", dict(stage=0, ranks=2, compute="fp32")), ("torch", dict(mode="ddp", autocast="none")), 1.25),
    ("stage 1 N=2 / DDP + ZeRO-1 2 x 1", ("zerodp", dict(stage=1, ranks=2, compute="fp32")), ("torch", dict(mode="zero", autocast="none")), 1.25),
    ("stage 3 N=2 / stage 0 N=2", ("zerodp", dict(stage=3, ranks=2, compute="fp32")), ("zerodp", dict(stage=0, ranks=2, compute="fp32")), 0.85),
]
if any(r.get("autocast") == "bf16" for r in rows):
    goals += [
        ("bf16 stage 0 N=1 / PyTorch + autocast 1 x 2", ("zerodp", dict(stage=0, ranks=1, compute="bf16")), ("torch", dict(mode="single", autocast="bf16")), 1.6),
        ("bf16 stage 0 N=2 / DDP + autocast 2 x 1", ("zerodp", dict(stage=0, ranks=2, compute="bf16")), ("torch", dict(mode="ddp", autocast="bf16")), 1.5),
        ("bf16 stage 1 N=2 / ZeRO-1 + autocast 2 x 1", ("zerodp", dict(stage=1, ranks=2, compute="bf16")), ("torch", dict(mode="zero", autocast="bf16")), 1.5),
        ("bf16 stage 3 N=2 / bf16 stage 0 N=2", ("zerodp", dict(stage=3, ranks=2, compute="bf16")), ("zerodp", dict(stage=0, ranks=2, compute="bf16")), 0.90),
    ]
for env in ("as-is", "unset"):
    rounds = sorted({r["round"] for r in rows if r["env"] == env})
    e = next(r["environment"] for r in rows if r["env"] == env and "environment" in r)
    t = next(r for r in rows if r["env"] == env and r["impl"] == "torch")
    label = "as it is" if env == "as-is" else "OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE unset"
    print(f"\nEnvironment {label}: OPENBLAS_CORETYPE={e['OPENBLAS_CORETYPE']}, OPENBLAS_L2_SIZE={e['OPENBLAS_L2_SIZE']}; "
          f"OpenBLAS core {e['openblas_core']}; sgemm 1024^3 {e['sgemm_gflops_1_thread']:.0f} GFLOP/s on 1 thread, "
          f"{e['sgemm_gflops_all_threads']:.0f} on {e['cores']}; OMP_WAIT_POLICY={t['environment']['OMP_WAIT_POLICY']} for PyTorch; "
          f"{'CPU' if e['time'] == 'cpu' else 'wall'} time; {len(rounds)} rounds")
    print(f"{'zerodp / other':44s} {'tokens/s':>9s} {'tokens/s':>9s} {'ratio':>6s} {'(range)':>12s} {'best':>5s} {'goal':>6s}")
    for name, (ia, ka), (ib, kb), goal in goals:
        ra = [pick(env, r, ia, **ka) for r in rounds]
        rb = [pick(env, r, ib, **kb) for r in rounds]
        a = [x["tokens_per_second"] for x in ra]
        b = [x["tokens_per_second"] for x in rb]
        ratios = [x / y for x, y in zip(a, b)]
        med = statistics.median(ratios)
        # Best blocks: the fastest block of each side over all rounds, the least disturbed.
        best = max(x["max"] for x in ra) / max(x["max"] for x in rb)
        verdict = "met" if med >= goal and best >= goal else "NOT met" if med < goal and best < goal else "unclear"
        print(f"{name:44s} {statistics.median(a):9.0f} {statistics.median(b):9.0f} {med:6.2f} "
              f"({min(ratios):.2f}-{max(ratios):.2f}) {best:5.2f} >={goal:.2f} {verdict}"
              f"{', every round' if min(ratios) >= goal else ''}")
    print("(PyTorch 1.13's FullyShardedDataParallel has no CPU path: no FSDP column.)")
    for compute in ("fp32", "bf16"):
        zs = [r for r in rows if r["env"] == env and r["impl"] == "zerodp" and r.get("compute") == compute]
        if not zs:
            continue
        print(f"zerodp {compute} on {zs[0]['kernel']} (median over rounds): " + "; ".join(
            f"stage {s} N={n}: {statistics.median([r['tokens_per_second'] for r in zs if r['stage'] == s and r['ranks'] == n]):.0f} tok/s, "
            f"GEMM {100 * statistics.median([r['gemm_share'] for r in zs if r['stage'] == s and r['ranks'] == n]):.0f} % "
            f"(conversions {100 * statistics.median([r.get('convert_share', 0) for r in zs if r['stage'] == s and r['ranks'] == n]):.0f} %), "
            f"{statistics.median([r['gflops'] for r in zs if r['stage'] == s and r['ranks'] == n]):.0f} GFLOP/s, "
            f"exposed comm {100 * statistics.median([r['exposed_comm_share'] for r in zs if r['stage'] == s and r['ranks'] == n]):.0f} %, "
            f"optimizer {100 * statistics.median([r.get('optimizer_share', 0) for r in zs if r['stage'] == s and r['ranks'] == n]):.0f} %"
            for s, n in ((0, 1), (0, 2), (1, 2), (3, 2))))
    # The model's bf16 rate against oneDNN's bf16 matmul at 1024^3, measured in the same round:
    # one rank on both cores (2 model threads) and two ranks of one core each.
    for ranks in (1, 2):
        ratios = []
        for r in rounds:
            z = [x for x in rows if x["env"] == env and x["round"] == r and x["impl"] == "zerodp"
                 and x.get("compute") == "bf16" and x.get("stage") == 0 and x.get("ranks") == ranks]
            g = [x for x in rows if x["env"] == env and x["round"] == r and x["impl"] == "gemm"
                 and x["case"] == "1024^3" and x["kernel"] == "oneDNN bf16"]
            if z and g:
                ratios.append(z[0]["gflops"] / g[0]["gflops"])
        if ratios:
            med = statistics.median(ratios)
            print(f"{f'bf16 stage 0 N={ranks} GFLOP/s / oneDNN bf16 1024^3':44s} {'':9s} {'':9s} {med:6.2f} "
                  f"({min(ratios):.2f}-{max(ratios):.2f}) {'':5s} >=0.60 {'met' if med >= 0.60 else 'NOT met'}"
                  f"{', every round' if min(ratios) >= 0.60 else ''}")
EOF
