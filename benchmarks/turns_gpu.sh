#!/usr/bin/env bash
# Does timing the lanes of a case in turns make their ratio repeatable? The same cases and lanes
# run REPEATS times with each --turns of TURNS (default 1,5; 1 = one lane after another), the
# settings alternating, each run a process of its own; then benchmarks/turns_spread.py prints each
# case's ratio per run and its spread (largest / smallest) by turns.
# Usage (repo root, PyTorch with CUDA):
#   bash benchmarks/turns_gpu.sh OUT_DIR [REPEATS] [TURNS] [LANE] [SUITE]
set -uo pipefail
out=${1:?usage: turns_gpu.sh OUT_DIR [REPEATS] [TURNS] [LANE] [SUITE]}
repeats=${2:-4} settings=${3:-1,5} lane=${4:-triton} suite=${5:-glample-2016}
mkdir -p "$out"
export PYTHONUNBUFFERED=1
rnnbench() { PYTHONPATH=src python3 -m rnnbench "$@"; }
rnnbench env --json > "$out/env.json"
for i in $(seq 1 "$repeats"); do
  for turns in ${settings//,/ }; do
    rnnbench run --suite "$suite" --lanes "torch-nn,$lane" --device cuda --turns "$turns" \
      --out "$out/turns$turns-run$i.jsonl" >> "$out/run.log" 2>&1
    echo "run $i, --turns $turns: exit $?"
  done
done
python3 benchmarks/turns_spread.py --lane "$lane" --baseline torch-nn "$out"/turns*-run*.jsonl | tee "$out/spread.md"
