#!/usr/bin/env bash
# Every lane, every framework, on the seed suites on a GPU, as run for benchmarks/results/<gpu>/.
#
# The GPU machine has no package index: Keras and the few wheels it needs travel as wheels.
#   1. Where there is an index:   bash benchmarks/fetch_wheels.sh          (fills .whl/, ~8 MB)
#   2. On the GPU machine (repo root, with .whl/ copied beside src/; PyTorch with CUDA, JAX with
#      its CUDA plugin, numpy and the rnnbench dependencies already installed):
#        RNNBENCH_GIT_COMMIT=<commit> bash benchmarks/frameworks_gpu.sh OUT_DIR [BUDGET_S] [SUITES]
#      BUDGET_S defaults to 0.3 (seconds of timed runs per pair), SUITES to the four seed suites
#      and `varlen` (lengths 10:200 padded to 200, batch 64, hidden 512; comma list). LANES=a,b,... narrows the lanes (default: every registered lane; those that
#      cannot run there are recorded `unavailable` with the reason, e.g. keras-tf without
#      TensorFlow); COMPILE_MODE=reduce-overhead|max-autotune sets torch-compile's mode (rows go to
#      OUT_DIR/<suite>-<mode>.jsonl).
# Each suite appends to OUT_DIR/<suite>.jsonl with --resume: a run cut short (a time limit, a lost
# machine) is continued by running the same command again; pairs already measured are skipped.
# TIME_LIMIT_S=N stops the whole script after about N seconds (the running suite is ended, its rows
# kept), for machines that limit a command's time: run it again to continue.
# The log of every run is OUT_DIR/run.log; `rnnbench report OUT_DIR/*.jsonl` renders the tables.
set -uo pipefail
out=${1:?usage: frameworks_gpu.sh OUT_DIR [BUDGET_S] [SUITES]}
budget=${2:-0.3}
suites=${3:-glample-2016,theano-cudnn-2016,fastrnns,flashrnn-2024,varlen}
mode=${COMPILE_MODE:-default}
mkdir -p "$out"
site=${RNNBENCH_SITE:-/tmp/site}
if ! PYTHONPATH=$site python3 -c "import keras" 2>/dev/null; then
  python3 -m pip install -q --no-index --no-deps --target "$site" .whl/*.whl || { echo "cannot install .whl/*.whl (run benchmarks/fetch_wheels.sh where there is an index, carry .whl)"; exit 2; }
fi
export PYTHONPATH=$site:src PYTHONUNBUFFERED=1 XLA_PYTHON_CLIENT_PREALLOCATE=false
python3 -m rnnbench env --json > "$out/env.json"
COLUMNS=200 python3 -m rnnbench list > "$out/lanes.txt" 2>&1
lanes=${LANES:+--lanes $LANES}
suffix=$([ "$mode" = default ] || echo "-$mode")
limit=${TIME_LIMIT_S:-0}
for suite in ${suites//,/ }; do
  file="$out/$suite$suffix.jsonl"
  left=$((limit - SECONDS))
  if [ "$limit" -gt 0 ] && [ "$left" -le 10 ]; then echo "$suite: not started (TIME_LIMIT_S reached; run again to continue)"; continue; fi
  ${TIME_LIMIT_S:+timeout "$left"} python3 -m rnnbench run --suite "$suite" --device cuda --budget "$budget" \
    --compile-mode "$mode" $lanes --out "$file" --resume >> "$out/run.log" 2>&1
  code=$?
  echo "$suite: exit $code$([ $code = 124 ] && echo ' (time limit: run again to continue)'), $(grep -c '"record": "result"' "$file" 2>/dev/null) rows, $(grep -c '"status": "ok"' "$file" 2>/dev/null) ok"
done
