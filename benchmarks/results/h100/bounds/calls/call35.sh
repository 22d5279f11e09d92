# the in-process A/B of the eager call without the compiler's wrapper (call34's probe, mended)
set -u
export RNNBENCH_GIT_COMMIT=$1
d=$OUT/c35; mkdir -p $d
PYTHONPATH=src python3 -m rnnbench env > $d/env.txt 2>&1
PYTHONPATH=src timeout 200 python3 benchmarks/results/h100/bounds/probes/unwrapped.py $d/unwrapped.jsonl > $d/unwrapped.txt 2>&1
tar czf $OUT/c35.tgz -C $OUT c35
cat $d/unwrapped.txt
