# Stacked replays' fast path: the replay tests on the GPU, then the A/B probe again
set -u
export PYTHONUNBUFFERED=1 RNNBENCH_GIT_COMMIT=$1
d=$OUT/c165; mkdir -p $d
PYTHONPATH=src python3 -m rnnbench env > $d/env.txt 2>&1
timeout 170 bash scripts/cuda_tests.sh $d/tests 8 "stacked or replay or replayed or eager_forward or training_step" > $d/tests.txt 2>&1; echo "tests rc $?" >> $d/rc.txt
grep -h -B2 -A8 "^E   " $d/tests/shard.*.log > $d/failures.txt 2>/dev/null
timeout 280 env PYTHONPATH=src python3 benchmarks/results/h200/stacks/probes/stacks.py $d/stacks.jsonl > $d/stacks.txt 2>&1; echo "probe rc $?" >> $d/rc.txt
tar czf $OUT/c165.tgz -C $OUT c165
cat $d/rc.txt; tail -11 $d/tests.txt; cut -c1-100,150-250 $d/stacks.txt | grep -v Warn | grep -v "result = "
