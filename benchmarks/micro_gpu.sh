#!/usr/bin/env bash
# The micro-benchmark suites on a GPU, as run for benchmarks/results/<gpu>/.
# Usage (repo root, PyTorch with CUDA installed): bash benchmarks/micro_gpu.sh OUT_DIR [BUDGET_S]
set -uo pipefail
out=${1:?usage: micro_gpu.sh OUT_DIR [BUDGET_S]}
budget=${2:-0.3}
mkdir -p "$out"
export PYTHONUNBUFFERED=1
rnnbench() { PYTHONPATH=src python3 -m rnnbench "$@"; }
rnnbench env --json > "$out/env.json"
for suite in glample-2016 theano-cudnn-2016 fastrnns flashrnn-2024; do
  rnnbench run --suite "$suite" --device cuda --budget "$budget" --out "$out/$suite.jsonl" --resume >> "$out/run.log" 2>&1
  echo "$suite: exit $?, $(grep -c '"record": "result"' "$out/$suite.jsonl") rows"
done
