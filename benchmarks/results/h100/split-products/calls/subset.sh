# CUDA tests matching -k EXPR in SHARDS parallel shards: bash ab/subset.sh LOG_DIR SHARDS "EXPR" FILES...
set -uo pipefail
logs=$1 shards=$2 expr=$3; shift 3
mkdir -p "$logs"
python3 -m pytest -q -m "cuda and not alone" --collect-only -k "$expr" "$@" 2>/dev/null | grep :: > "$logs/ids"
(cd "$logs" && split -n "r/$shards" ids shard.)
pids=()
for f in "$logs"/shard.??; do
  python3 -m pytest -q -p no:cacheprovider $(cat "$f") > "$f.log" 2>&1 &
  pids+=($!)
done
status=0
for pid in "${pids[@]}"; do wait "$pid" || status=1; done
rm -f "$logs"/shard.??
wc -l < "$logs/ids"; tail -qn1 "$logs"/shard.*.log
grep -h "^FAILED\|^ERROR" "$logs"/shard.*.log
exit $status
