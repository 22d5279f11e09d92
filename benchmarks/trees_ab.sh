#!/usr/bin/env bash
# Two source trees of rnnbench on the same cases, side by side: the engine with the old tree's
# src/, then the new, the new, the old (each run a process of its own, so the order favours
# neither), then `rnnbench compare` of each old run against the new run beside it. For changes of
# host time, which an A/B inside one process cannot hold (it would have to import both trees).
#
# Usage (repo root, PyTorch with CUDA):
#   git archive OLD_COMMIT src | tar -x -C build/old      # here; then carry build/old
#   OLD_COMMIT=... NEW_COMMIT=... bash benchmarks/trees_ab.sh build/old/src OUT_DIR [rnnbench run options]
# Writes OUT_DIR/{old,new}-{1,2}.jsonl, compare-{1,2}.md (new/old time per lane and case) and
# run.log; the options after OUT_DIR pick the cases and lanes (default: every seed suite, every lane).
set -uo pipefail
old=${1:?usage: trees_ab.sh OLD_SRC OUT_DIR [run options]} out=${2:?usage: trees_ab.sh OLD_SRC OUT_DIR [run options]}
shift 2
if [ ! -d "$old/rnnbench" ]; then echo "trees_ab.sh: $old has no rnnbench package" >&2; exit 2; fi
mkdir -p "$out"
export PYTHONUNBUFFERED=1
status=0
for step in old:1 new:1 new:2 old:2; do
  tree=${step%:*} n=${step#*:}
  if [ "$tree" = old ]; then src=$old commit=${OLD_COMMIT:-old}; else src=src commit=${NEW_COMMIT:-new}; fi
  RNNBENCH_GIT_COMMIT=$commit PYTHONPATH=$src python3 -m rnnbench run "$@" --out "$out/$tree-$n.jsonl" \
    >> "$out/run.log" 2>&1
  rc=$?
  echo "$tree run $n: exit $rc"
  [ $rc -eq 0 ] || status=1
done
for n in 1 2; do
  # (exit 1 means a pair got slower: reported in the file, not a failure of this script)
  PYTHONPATH=src python3 -m rnnbench compare "$out/old-$n.jsonl" "$out/new-$n.jsonl" --threshold 3% \
    > "$out/compare-$n.md" 2>&1
done
exit $status
