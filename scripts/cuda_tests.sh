#!/usr/bin/env bash
# The CUDA tests on a GPU machine, in parallel shards: bash scripts/cuda_tests.sh LOG_DIR [SHARDS] [EXPR]
#
# `pytest -m cuda` one after another takes about 20 minutes on the H100; most of it is compiling
# kernels, so SHARDS processes (default 8) share the GPU. Tests marked `alone` time the GPU and
# fail beside other processes, so they run after the shards, by themselves. EXPR, where given, is
# pytest's `-k` expression: only the CUDA tests it selects run (alone ones too). Writes
# LOG_DIR/ids, LOG_DIR/shard.*.log and LOG_DIR/alone.log; prints how many tests were collected,
# each log's last line and every failure; exits non-zero when any test failed. Runs from a
# checkout (pytest's pythonpath finds src/).
set -uo pipefail
cd "$(dirname "$0")/.."
if [ $# -lt 1 ] || [ $# -gt 3 ]; then echo "usage: bash scripts/cuda_tests.sh LOG_DIR [SHARDS] [EXPR]" >&2; exit 2; fi
logs=$1 shards=${2:-8}
select=()
if [ $# -eq 3 ]; then select=(-k "$3"); fi
py=${PYTHON:-python3}
mkdir -p "$logs"
"$py" -m pytest -q -m "cuda and not alone" "${select[@]}" --collect-only tests 2>/dev/null | grep :: > "$logs/ids"
if [ ! -s "$logs/ids" ]; then echo "no CUDA tests collected (is a GPU visible? does EXPR select any?)" >&2; exit 1; fi
echo "$(wc -l < "$logs/ids") tests in $shards shards"
(cd "$logs" && split -n "r/$shards" ids shard.)
pids=()
for f in "$logs"/shard.??; do
  "$py" -m pytest -q -p no:cacheprovider $(cat "$f") > "$f.log" 2>&1 &
  pids+=($!)
done
status=0
for pid in "${pids[@]}"; do wait "$pid" || status=1; done
rm -f "$logs"/shard.??
# (exit 5: no alone test selected, not a failure)
"$py" -m pytest -q -p no:cacheprovider -m "cuda and alone" "${select[@]}" tests > "$logs/alone.log" 2>&1
rc=$?
if [ $rc -ne 0 ] && [ $rc -ne 5 ]; then status=1; fi
tail -qn1 "$logs"/shard.*.log "$logs/alone.log"
grep -h "^FAILED\|^ERROR" "$logs"/shard.*.log "$logs/alone.log"
exit $status
