#!/usr/bin/env bash
# The engine under mpirun (one rank per process) against the threads backend (one rank per
# thread): the same run ends with the same weights hash at every stage — both backends sum in
# rank order in fp32 and every rank uses one BLAS thread — and resumes from a checkpoint the
# other backend wrote. Usage: engine_matches_threads.sh path/to/zerodp
set -euo pipefail
zerodp=$1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
mpi() { mpirun -np 3 --oversubscribe --allow-run-as-root "$zerodp" "$@" --backend mpi; }
hash_of() { grep -o '"weights_sha256": "[0-9a-f]*"' | cut -d'"' -f4; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Word-split on purpose: every word is plain (no quotes, no spaces in the mktemp path).
gpt="--layers 1 --heads 2 --hidden 32 --seq-len 16 --micro-batch 2 --steps 6 --out $work/out --json"
for stage in 0 1 2 3; do
  threads=$("$zerodp" train $gpt --ranks 3 --stage $stage | hash_of)
  mpi_hash=$(mpi train $gpt --stage $stage | hash_of)
  echo "stage $stage: threads $threads, mpi $mpi_hash"
  [ -n "$threads" ] && [ "$threads" = "$mpi_hash" ] || { echo "FAIL: stage $stage differs"; exit 1; }
done

# qwZ: the int8 payloads are gathered as bytes by both backends, and dequantized alike.
threads=$("$zerodp" train $gpt --ranks 3 --stage 3 --zeropp qwz --qwz-block 5 | hash_of)
mpi_hash=$(mpi train $gpt --stage 3 --zeropp qwz --qwz-block 5 | hash_of)
echo "stage 3 with qwZ: threads $threads, mpi $mpi_hash"
[ -n "$threads" ] && [ "$threads" = "$mpi_hash" ] || { echo "FAIL: qwZ differs"; exit 1; }
# hpZ over MPI host groups (hosts of one rank here: the secondary copy is the whole unit) ends
# where qwZ alone does: the backward computes with the weights the forward gathered.
hpz_hash=$(mpi train $gpt --stage 3 --zeropp qwz,hpz --ranks-per-host 1 --qwz-block 5 | hash_of)
echo "stage 3 with qwZ and hpZ: mpi $hpz_hash"
[ "$hpz_hash" = "$threads" ] || { echo "FAIL: hpZ changed the bits"; exit 1; }
# qgZ: the two quantized all-to-alls sum in the same fixed order on both backends.
threads=$("$zerodp" train $gpt --ranks 3 --stage 3 --zeropp qwz,qgz --ranks-per-host 1 | hash_of)
mpi_hash=$(mpi train $gpt --stage 3 --zeropp qwz,qgz --ranks-per-host 1 | hash_of)
echo "stage 3 with qwZ and qgZ: threads $threads, mpi $mpi_hash"
[ -n "$threads" ] && [ "$threads" = "$mpi_hash" ] || { echo "FAIL: qgZ differs"; exit 1; }

# 8-bit AdamW: blocks cut between ranks (small buckets) agree on their absmax through one
# all-gather of edge maxima, on both backends alike; stage 0 holds every block whole. (The same
# buckets on both sides: the clipped norm's partial sums follow them.)
threads=$("$zerodp" train $gpt --ranks 3 --stage 0 --optimizer adamw-8bit --bucket-bytes 3000B | hash_of)
mpi_hash=$(mpi train $gpt --stage 2 --optimizer adamw-8bit --bucket-bytes 3000B | hash_of)
echo "8-bit AdamW: threads stage 0 $threads, mpi stage 2 $mpi_hash"
[ -n "$threads" ] && [ "$threads" = "$mpi_hash" ] || { echo "FAIL: 8-bit AdamW differs"; exit 1; }

# Adafactor: tensors cut between ranks add their rows', columns' and update's exact sums from
# every holder, exchanged as bytes, on both backends alike; stage 0 holds every tensor whole.
threads=$("$zerodp" train $gpt --ranks 3 --stage 0 --optimizer adafactor --bucket-bytes 3000B | hash_of)
mpi_hash=$(mpi train $gpt --stage 3 --optimizer adafactor --bucket-bytes 3000B | hash_of)
echo "Adafactor: threads stage 0 $threads, mpi stage 3 $mpi_hash"
[ -n "$threads" ] && [ "$threads" = "$mpi_hash" ] || { echo "FAIL: Adafactor differs"; exit 1; }

# A checkpoint written by 3 MPI processes resumes on 2 thread ranks at another stage.
mpi train $gpt --stage 3 --save-dir "$work/ck" --save-every 3 >/dev/null
"$zerodp" train ${gpt/--steps 6/--steps 9} --ranks 2 --stage 1 --resume "$work/ck" >/dev/null
echo "resume from an MPI checkpoint on threads: ok"

# LoRA beside a frozen base (the base above, saved by MPI): each stage's adapters end with the
# same bits on both backends, stage 3 gathering the base's chunks as it gathers the adapters'.
lora="--lora-rank 4 --lora-targets all-linear --base $work/ck --micro-batch 2 --steps 4 --out $work/out --json"
for stage in 0 3; do
  threads=$("$zerodp" train $lora --ranks 3 --stage $stage | hash_of)
  mpi_hash=$(mpi train $lora --stage $stage | hash_of)
  echo "LoRA stage $stage: threads $threads, mpi $mpi_hash"
  [ -n "$threads" ] && [ "$threads" = "$mpi_hash" ] || { echo "FAIL: LoRA stage $stage differs"; exit 1; }
done
# QLoRA: the base's NF4 codes sharded and gathered as words at stage 3.
threads=$("$zerodp" train $lora --quantize nf4 --ranks 3 --stage 3 | hash_of)
mpi_hash=$(mpi train $lora --quantize nf4 --stage 3 | hash_of)
echo "QLoRA stage 3: threads $threads, mpi $mpi_hash"
[ -n "$threads" ] && [ "$threads" = "$mpi_hash" ] || { echo "FAIL: QLoRA differs"; exit 1; }

# measure under MPI: every rank's model state and bytes sent equal the prediction (N | Φ), and
# with qwZ the bytes of its payloads (any N: the engine's own ring prediction).
mpi measure --stage 2 --params 4224 --steps 1 --json > "$work/m.json"
mpi measure --stage 3 --zeropp qwz --params 4224 --steps 1 --json > "$work/q.json"
mpi measure --stage 3 --zeropp qwz,hpz --ranks-per-host 1 --params 4224 --steps 1 --json > "$work/h.json"
mpi measure --stage 3 --zeropp qwz,hpz,qgz --ranks-per-host 3 --params 4224 --steps 1 --json \
  > "$work/g.json"
mpi measure --model gpt --layers 1 --hidden 64 --optimizer adamw-8bit --stage 3 --steps 1 \
  --bucket-bytes 6000B --json > "$work/e.json"
mpi measure --model gpt --layers 1 --hidden 64 --optimizer adafactor --stage 3 --steps 1 \
  --bucket-bytes 6000B --json > "$work/a.json"
python3 - "$work/m.json" "$work/q.json" "$work/h.json" "$work/g.json" "$work/e.json" \
  "$work/a.json" <<'PY'
import json, sys
for path in sys.argv[1:]:
    m = json.load(open(path))
    assert m["ranks"] == 3 and len(m["per_rank"]) == 3, m
    for r in m["per_rank"]:
        assert r["model_state_bytes"] == r["predicted_model_state_bytes"], r
        assert r["rss_peak_bytes"] > 0, r
    # Per rank where N divides every bucket (the MLP of 4224); else over all ranks, as the
    # sends of unequal chunks add up to the ring's.
    sent = [r["comm_sent_bytes"] for r in m["per_rank"]]
    predicted = [r["predicted_comm_bytes"] for r in m["per_rank"]]
    if path.endswith("e.json") or path.endswith("a.json"):
        assert sum(sent) == sum(predicted), (sent, predicted)
    else:
        assert sent == predicted, (sent, predicted)
print("measure under MPI: model state and bytes sent equal the prediction (bytes over all ranks "
      "where chunks are unequal), ZeRO++ "
      "8-bit AdamW and Adafactor too")
PY
