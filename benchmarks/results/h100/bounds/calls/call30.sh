# upper bounds of what is left of the eager step's host time (bounds.py)
set -u
export RNNBENCH_GIT_COMMIT=$1
d=$OUT/c30; mkdir -p $d
PYTHONPATH=src python3 -m rnnbench env > $d/env.txt 2>&1
PYTHONPATH=src timeout 500 python3 benchmarks/results/h100/bounds/probes/bounds.py $d/bounds.jsonl > $d/bounds.txt 2>&1
tar czf $OUT/c30.tgz -C $OUT c30
cat $d/bounds.txt | tail -60
