# the engine's training step in parts, in line (segments.py)
set -u
export RNNBENCH_GIT_COMMIT=$1
d=$OUT/c37; mkdir -p $d
PYTHONPATH=src python3 -m rnnbench env > $d/env.txt 2>&1
PYTHONPATH=src timeout 300 python3 benchmarks/results/h100/backward-host/probes/segments.py $d/segments.jsonl > $d/segments.txt 2>&1
tar czf $OUT/c37.tgz -C $OUT c37
cat $d/segments.txt | tail -30
