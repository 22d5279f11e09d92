#!/usr/bin/env bash
# One device call's CUDA tests, kept whole: bash scripts/device_tests.sh DIR [SECONDS] [EXPR]
#
# For the device tool (docs/kernel-rounds.md): writes DIR/env.txt (`rnnbench env`), runs
# scripts/cuda_tests.sh (14 shards; EXPR its -k selection, none: the whole suite) for at most
# SECONDS (default 420), and keeps what a record needs in few files, as only 8 come back from the
# device: DIR/tests.txt (the runner's output), DIR/summaries.txt (each log's counts),
# DIR/failures.txt (every error with its context) and "tests rc N" appended to DIR/rc.txt; the
# logs themselves are removed. Prints the rc, the counts and the first failures. Exits with the
# runner's status.
set -uo pipefail
cd "$(dirname "$0")/.."
if [ $# -lt 1 ] || [ $# -gt 3 ]; then echo "usage: bash scripts/device_tests.sh DIR [SECONDS] [EXPR]" >&2; exit 2; fi
d=$1 seconds=${2:-420}
select=()
if [ $# -eq 3 ]; then select=("$3"); fi
mkdir -p "$d"
PYTHONPATH=src "${PYTHON:-python3}" -m rnnbench env > "$d/env.txt" 2>&1
timeout "$seconds" bash scripts/cuda_tests.sh "$d/suite" 14 "${select[@]}" > "$d/tests.txt" 2>&1
rc=$?
echo "tests rc $rc" >> "$d/rc.txt"
grep -h -B5 -A20 "^E   " "$d"/suite/shard.*.log "$d/suite/alone.log" > "$d/failures.txt" 2>/dev/null
grep -h "passed\|failed" "$d"/suite/shard.*.log "$d/suite/alone.log" > "$d/summaries.txt" 2>/dev/null
rm -rf "$d/suite"
echo "tests rc $rc"; head -1 "$d/tests.txt"; cat "$d/summaries.txt"; grep "^FAILED\|^ERROR" "$d/tests.txt" | head
head -c 1500 "$d/failures.txt"
exit $rc
