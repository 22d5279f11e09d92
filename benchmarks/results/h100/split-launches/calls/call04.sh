# the gradients' limits: as before, without the eager tiles rule, from 4e9 (eager and graphed)
set -u
export RNNBENCH_GIT_COMMIT=$1 PYTHONUNBUFFERED=1
d=$OUT/c04; mkdir -p $d
PYTHONPATH=src python3 -m rnnbench env > $d/env.txt 2>&1
PYTHONPATH=src timeout 500 python3 benchmarks/results/h100/split-launches/probes/limits.py $d/limits.jsonl gradients > $d/limits.txt 2>&1; echo "rc $?" >> $d/limits.txt
tar czf $OUT/c04.tgz -C $OUT c04
grep -v Warn $d/limits.txt | sed 's/-T30-\(.*\)-L1-fp32-\(\w*\)-all_steps-cuda/ \1 \2/'
