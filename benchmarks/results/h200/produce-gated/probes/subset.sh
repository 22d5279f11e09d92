# bash ab/subset.sh LOGDIR SHARDS "KEXPR" FILES... : the CUDA tests matching KEXPR in FILES, in parallel shards
set -uo pipefail
logs=$1 shards=$2 expr=$3; shift 3
mkdir -p "$logs"
python3 -m pytest -q -m cuda -k "$expr" --collect-only "$@" 2>/dev/null | grep :: > "$logs/ids"
wc -l < "$logs/ids"
(cd "$logs" && split -n "r/$shards" ids shard.)
pids=()
for f in "$logs"/shard.??; do python3 -m pytest -q -p no:cacheprovider $(cat "$f") > "$f.log" 2>&1 & pids+=($!); done
status=0; for p in "${pids[@]}"; do wait $p || status=1; done
rm -f "$logs"/shard.??
tail -qn1 "$logs"/shard.*.log; grep -h "^FAILED\|^ERROR" "$logs"/shard.*.log | cut -c1-250
exit $status
