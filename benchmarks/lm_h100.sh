#!/usr/bin/env bash
# Language-model benchmark (`rnnbench lm`) on one H100: seed 002's WikiText-2 model, Zaremba et
# al.'s PTB "large" model (measured in TensorFlow by seed 003) and a character-level run that must
# really learn. About 5 minutes; every run is capped by --max-minutes and by `timeout`.
#
# Usage, from the repository root, on a machine with no internet:
#   benchmarks/lm_h100.sh OUTPUT_DIR
# Expects (laid out by the caller, see shared/data/README.md):
#   data-local/wt2/train.txt   <- wikitext-2/valid.txt
#   data-local/wt2/valid.txt   <- wikitext-2/test.txt
#   data-local/wt2/test.txt    <- wikitext-2/test.txt
#   data-local/tinyshakespeare/input.txt
# Override the locations with WT2=DIR and SHAKESPEARE=FILE. For a smoke test elsewhere:
#   DEVICE=cpu EXTRA="--max-steps 2 --emb-size 16 --hidden-size 16 --no-tf32" benchmarks/lm_h100.sh /tmp/x
# ONLY=name,name runs just those runs (names as below, e.g. ONLY=kawakami-torch-nn-bf16,kawakami-triton-bf16).
set -uo pipefail

OUT=${1:?usage: benchmarks/lm_h100.sh OUTPUT_DIR}
cd "$(dirname "$0")/.."
export PYTHONPATH="src${PYTHONPATH:+:$PYTHONPATH}"
WT2=${WT2:-data-local/wt2}
SHAKESPEARE=${SHAKESPEARE:-data-local/tinyshakespeare/input.txt}
PY=${PYTHON:-python3}
DEVICE=${DEVICE:-cuda}
read -r -a EXTRA_ARGS <<< "${EXTRA:-}"  # appended to every run; later options win
# `rnnbench lm`, run from the source tree.
LM=("$PY" -m rnnbench lm)

for f in "$WT2/train.txt" "$WT2/valid.txt" "$WT2/test.txt" "$SHAKESPEARE"; do
  [[ -s $f ]] || { echo "missing $f (see the header of $0)" >&2; exit 2; }
done
mkdir -p "$OUT"

# Every WikiText row carries this note: the train split is not the real one.
WT2_NOTE="WikiText-2 laid out from its valid/test splits (train<-valid.txt, valid and test<-test.txt): 18k-word vocabulary instead of 33k (a cheaper decoder), perplexities not comparable with published WikiText-2 figures"
SHAKESPEARE_NOTE="Tiny Shakespeare (char-rnn), character level, input.txt split 90/5/5; perplexity per character"

failures=0
run() {  # run NAME ARGS...: one lm run writing OUT/NAME.jsonl; a failure is counted, not fatal
  local name=$1; shift
  [[ -z ${ONLY:-} || ",$ONLY," == *",$name,"* ]] || return 0
  echo "=== $name  ($(date +%T))"
  # SIGINT lets the run keep its finished rows if the outer cap ever fires.
  timeout --signal=INT 240 "${LM[@]}" --device "$DEVICE" --no-progress --out "$OUT/$name.jsonl" "$@" "${EXTRA_ARGS[@]}"
  local rc=$?
  if (( rc != 0 )); then echo "!!! $name exited with $rc"; failures=$((failures + 1)); fi
}

WT2_ARGS=(--data-dir "$WT2" --level word --dataset-note "$WT2_NOTE")

# Seed 002's configuration (1x1024 LSTM, batch 128 x 128 steps, Adam): ~13 batches per epoch here.
run kawakami-torch-nn-fp32     --preset kawakami-2017 --lane torch-nn --epochs 1 --max-minutes 1.5 "${WT2_ARGS[@]}"
run kawakami-torch-nn-bf16     --preset kawakami-2017 --lane torch-nn --epochs 1 --amp bf16 --max-minutes 1.5 "${WT2_ARGS[@]}"
# Our Triton kernels (issue 8's lm check): the same bf16 run as torch-nn's above, side by side.
run kawakami-triton-bf16       --preset kawakami-2017 --lane triton --epochs 1 --amp bf16 --max-minutes 1.5 "${WT2_ARGS[@]}"
run kawakami-cell-loop-fp32    --preset kawakami-2017 --lane torch-cell-loop --max-steps 30 --max-minutes 1.5 "${WT2_ARGS[@]}"

# Zaremba et al. 2014 "large" (2x1500 LSTM, batch 20 x 35 steps, SGD): 200 steps of ~300 per epoch.
run zaremba-torch-nn-fp32      --preset zaremba-large --lane torch-nn --max-steps 200 --max-minutes 1.5 "${WT2_ARGS[@]}"
run zaremba-torch-nn-bf16      --preset zaremba-large --lane torch-nn --amp bf16 --max-steps 200 --max-minutes 1.5 "${WT2_ARGS[@]}"
run zaremba-cell-loop-fp32     --preset zaremba-large --lane torch-cell-loop --max-steps 200 --max-minutes 1.5 "${WT2_ARGS[@]}"
# Our kernels on it (two layers at hidden 1500, not a multiple of 8), beside torch-nn's runs above.
run zaremba-triton-bf16        --preset zaremba-large --lane triton --amp bf16 --max-steps 200 --max-minutes 1.5 "${WT2_ARGS[@]}"
run zaremba-triton-tf32        --preset zaremba-large --lane triton --tf32 --max-steps 200 --max-minutes 1.5 "${WT2_ARGS[@]}"

# Character level: a 2x512 LSTM must learn (uniform over 65 characters is perplexity 65; a
# trained char-rnn reaches ~4.5). ~120 batches per epoch; stops at 15 epochs or 2 minutes. TF32
# only to fit more epochs in the time; this run checks learning, the WikiText runs measure speed.
run shakespeare-char-torch-nn  --preset small --rnn LSTM --num-layers 2 --emb-size 128 --hidden-size 512 \
  --batch-size 64 --bptt 128 --optimizer adam --lr 2e-3 --dropout 0.2 --clip 5 --epochs 15 --tf32 \
  --max-minutes 2 --data-dir "$SHAKESPEARE" --level char --dataset-note "$SHAKESPEARE_NOTE"

echo "=== report  ($(date +%T))"
# `rnnbench report "$OUT"/*.jsonl` renders the same rows; this adds the notes and the char-level check.
"$PY" - "$OUT"/*.jsonl <<'EOF'
import sys

import pandas as pd

from rnnbench.lm.report import lm_table, read_lm_records

records = read_lm_records(sys.argv[1:])
table = lm_table(records)
with pd.option_context("display.width", 250, "display.max_columns", None):
    print(table.to_string(index=False))
for note in dict.fromkeys(r.get("dataset_note") for r in records if r.get("record") == "lm"):
    if note:
        print(f"note: {note}")
char = [r for r in records if r.get("record") == "lm" and r.get("level") == "char"]
if char:
    ppl = min(r["valid_ppl"] for r in char)
    verdict = "learns" if ppl < 5 else "DID NOT reach perplexity 5"
    print(f"char-level check: best valid perplexity {ppl:.2f} over {char[-1]['vocab_size']} characters -> {verdict}")
EOF

echo "done: $failures failed run(s); results in $OUT"
exit $(( failures > 0 ))
