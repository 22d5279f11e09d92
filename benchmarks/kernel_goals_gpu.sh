#!/usr/bin/env bash
# Issue 8's speed goals measured on one GPU, then judged (benchmarks/kernel_goals.py): every seed
# suite, glample-2016's and theano-cudnn-2016's depth-1 cases in TF32 and bf16, and the
# language-model check, each part a run of its own (its lanes timed side by side in turns).
#
# Usage, from the repository root:
#   bash benchmarks/kernel_goals_gpu.sh OUTPUT_DIR [PARTS]
# PARTS: a comma list of seeds, glample, theano, lm (default: all four). Times on an H200: seeds
# about 5 minutes, glample 1.5, theano 4, lm 4 (it needs data-local/ as benchmarks/lm_h100.sh
# says). Each part writes OUTPUT_DIR/<part>.jsonl (lm: OUTPUT_DIR/lm/*.jsonl; a part run again
# appends, its later rows superseding). The judgement reads every part in OUTPUT_DIR (so parts may
# run in separate calls) and goes to OUTPUT_DIR/goals.md; the exit code is kernel_goals.py's
# (0: no goal missed, 1: one missed, 2: bad input). RUNS=N measures each part N times, each run a
# process of its own (`rnnbench run --runs N`): a goal then reads the median of each case's ratios,
# as a ratio near its bar should be read (docs/methodology.md).
set -uo pipefail

OUT=${1:?usage: benchmarks/kernel_goals_gpu.sh OUTPUT_DIR [seeds,glample,theano,lm]}
PARTS=${2:-seeds,glample,theano,lm}
cd "$(dirname "$0")/.."
export PYTHONPATH="src${PYTHONPATH:+:$PYTHONPATH}"
PY=${PYTHON:-python3}
for part in ${PARTS//,/ }; do
  case $part in seeds|glample|theano|lm) ;; *) echo "unknown part '$part'; choose from seeds, glample, theano, lm" >&2; exit 2 ;; esac
done
mkdir -p "$OUT"
"$PY" -m rnnbench env > "$OUT/env.txt" 2>&1

LANES=(--lanes torch-nn,torch-nn-graph,triton,triton-graph --device cuda --runs "${RUNS:-1}")
run() {  # run PART ARGS...: one `rnnbench run` writing OUT/PART.jsonl; a failure is said, not fatal
  local part=$1; shift
  [[ ",$PARTS," == *",$part,"* ]] || return 0
  echo "=== $part  ($(date +%T))"
  "$PY" -m rnnbench run "$@" "${LANES[@]}" --out "$OUT/$part.jsonl" > "$OUT/$part.log" 2>&1
  echo "$part rc $?" | tee -a "$OUT/rc.txt"
}
# Every seed suite in its own dtypes: the issue's "no case slower than 0.9x", FlashRNN's bars,
# and the fp32 forward and training of glample's and theano's depth-1 cases.
run seeds --suite glample-2016,theano-cudnn-2016,fastrnns,flashrnn-2024
# The issue's TF32 and bf16 cases: glample-2016's four and theano-cudnn-2016's twelve at depth 1.
run glample --suite glample-2016 --dtype tf32,bf16
run theano --cell lstm,gru --batch-size 32,128 --seq-len 30 --input-size hidden --hidden-size 128,512,1024 \
  --num-layers 1 --dtype tf32,bf16
if [[ ",$PARTS," == *",lm,"* ]]; then
  echo "=== lm  ($(date +%T))"
  ONLY=kawakami-torch-nn-bf16,kawakami-triton-bf16 bash benchmarks/lm_h100.sh "$OUT/lm" > "$OUT/lm.log" 2>&1
  echo "lm rc $?" | tee -a "$OUT/rc.txt"
fi

results=("$OUT"/*.jsonl)
lm=()
[[ -d $OUT/lm ]] && lm=(--lm "$OUT"/lm/*.jsonl)
[[ -e ${results[0]} ]] || { echo "no results in $OUT" >&2; exit 2; }
"$PY" benchmarks/kernel_goals.py "${results[@]}" "${lm[@]}" | tee "$OUT/goals.md"
exit "${PIPESTATUS[0]}"
