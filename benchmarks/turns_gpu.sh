#!/usr/bin/env bash
# Does timing the lanes of a case in turns make their ratio repeatable? The same cases and lanes
# run REPEATS times with --turns 1 (one lane after another) and REPEATS times with --turns 5,
# alternating, each run a process of its own; then benchmarks/turns_spread.py prints each case's
# ratio per run and its spread (largest / smallest) by turns.
# Usage (repo root, PyTorch with CUDA): bash benchmarks/turns_gpu.sh OUT_DIR [REPEATS] [LANE] [SUITE]
set -uo pipefail
out=${1:?usage: turns_gpu.sh OUT_DIR [REPEATS] [LANE] [SUITE]}
repeats=${2:-4} lane=${3:-triton} suite=${4:-glample-2016}
mkdir -p "$out"
export PYTHONUNBUFFERED=1
rnnbench() { PYTHONPATH=src python3 -m rnnbench "$@"; }
rnnbench env --json > "$out/env.json"
for i in $(seq 1 "$repeats"); do
  for turns in 1 5; do
    rnnbench run --suite "$suite" --lanes "torch-nn,$lane" --device cuda --turns "$turns" \
      --out "$out/turns$turns-run$i.jsonl" >> "$out/run.log" 2>&1
    echo "run $i, --turns $turns: exit $?"
  done
done
python3 benchmarks/turns_spread.py --lane "$lane" --baseline torch-nn "$out"/turns*-run*.jsonl | tee "$out/spread.md"
