#!/usr/bin/env bash
# Data-parallel language-model benchmark: seed 002's WikiText-2 model (the kawakami-2017 preset,
# 1x1024 LSTM, global batch 128 x 128 steps) in bf16 with torch-nn, on 1 process and then on NPROC
# processes (one per GPU, DistributedDataParallel over NCCL) in the same session, same global
# batch. Every run is capped by --max-minutes and by `timeout` (INT at 140 s, KILL 15 s later),
# so the whole script ends within 6 minutes.
#
# Usage, from the repository root, on a machine with NPROC GPUs and no internet:
#   benchmarks/lm_ddp.sh OUTPUT_DIR
# Expects data-local/wt2/{train,valid,test}.txt laid out as benchmarks/lm_h100.sh says (WT2=DIR
# overrides). NPROC=2 by default. For a smoke test on the CPU (gloo):
#   DEVICE=cpu EXTRA="--max-steps 4 --emb-size 16 --hidden-size 16 --batch-size 8 --bptt 16" \
#     AMP=off WT2=/some/tiny/corpus benchmarks/lm_ddp.sh /tmp/x
set -uo pipefail

OUT=${1:?usage: benchmarks/lm_ddp.sh OUTPUT_DIR}
cd "$(dirname "$0")/.."
export PYTHONPATH="src${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
# NVLink multicast off on shared hosts (rnnbench sets these too; here for anything else started).
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
WT2=${WT2:-data-local/wt2}
PY=${PYTHON:-python3}
DEVICE=${DEVICE:-cuda}
NPROC=${NPROC:-2}
AMP=${AMP:-bf16}
read -r -a EXTRA_ARGS <<< "${EXTRA:-}"
for f in "$WT2/train.txt" "$WT2/valid.txt" "$WT2/test.txt"; do
  [[ -s $f ]] || { echo "missing $f (see the header of benchmarks/lm_h100.sh)" >&2; exit 2; }
done
mkdir -p "$OUT"
"$PY" -m rnnbench env --json > "$OUT/env.json"

WT2_NOTE="WikiText-2 laid out from its valid/test splits (train<-valid.txt, valid and test<-test.txt): 18k-word vocabulary instead of 33k (a cheaper decoder), perplexities not comparable with published WikiText-2 figures"
# Three epochs (13 batches each here, the first 3 of each phase untimed), so that each row's speed
# rests on 10 timed batches and the second epoch runs with every kernel and NCCL channel warm.
ARGS=(--preset kawakami-2017 --lane torch-nn --amp "$AMP" --epochs 3 --max-minutes 1.5 --device "$DEVICE"
      --no-progress --data-dir "$WT2" --level word --dataset-note "$WT2_NOTE")

failures=0
run() {  # run NAME ARGS...: one lm run writing OUT/NAME.jsonl; a failure is counted, not fatal
  local name=$1; shift
  echo "=== $name  ($(date +%T))"
  # INT first (the launcher stops its workers, rows already written stay); KILL 15 s later at
  # the latest, so the script ends within 6 minutes whatever a run does.
  timeout --signal=INT --kill-after=15 140 "$PY" -m rnnbench lm "${ARGS[@]}" --out "$OUT/$name.jsonl" "$@" "${EXTRA_ARGS[@]}"
  local rc=$?
  if (( rc != 0 )); then echo "!!! $name exited with $rc"; failures=$((failures + 1)); fi
}
run "kawakami-$AMP-1proc"
run "kawakami-$AMP-${NPROC}proc" --nproc "$NPROC"

echo "=== report  ($(date +%T))"
"$PY" -m rnnbench report "$OUT"/kawakami-*.jsonl
echo "=== scaling (train words/s of all processes, per process, efficiency = N-process / (N x 1-process))"
"$PY" - "$OUT"/kawakami-*.jsonl <<'PYEOF'
import sys
from rnnbench.lm.report import lm_table, read_lm_records
frame = lm_table(read_lm_records(sys.argv[1:]))
short = ["epoch", "processes", "train words/s", "train words/s per process", "scaling efficiency"]
print(frame[[c for c in short if c in frame.columns]].to_string(index=False))
PYEOF
echo "done: $failures failed run(s); results in $OUT"
exit $(( failures > 0 ))
