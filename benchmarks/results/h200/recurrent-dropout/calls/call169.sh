# Recurrent dropout at its final commit: its CUDA tests and the launch/replay CUDA tests, then the probe
set -u
export PYTHONUNBUFFERED=1 RNNBENCH_GIT_COMMIT=$1
d=$OUT/c169; mkdir -p $d
PYTHONPATH=src python3 -m rnnbench env > $d/env.txt 2>&1
timeout 200 bash scripts/cuda_tests.sh $d/tests 14 "test_cuda_kernels_against_reference or layer or eager or replay or lengths" > $d/tests.txt 2>&1; echo "tests rc $?" >> $d/rc.txt
grep -h -B5 -A30 "^E   " $d/tests/shard.*.log > $d/failures.txt 2>/dev/null
timeout 300 env PYTHONPATH=src python3 benchmarks/results/h200/recurrent-dropout/probes/dropout.py $d/dropout.jsonl > $d/dropout.txt 2>&1; echo "probe rc $?" >> $d/rc.txt
rm -rf $d/tests/shard.??
tar czf $OUT/c169.tgz -C $OUT c169
cat $d/rc.txt; head -1 $d/tests.txt; grep -h "passed\|failed" $d/tests/shard.*.log | tail -14; head -c 2000 $d/failures.txt; grep -v "Warn\|result = " $d/dropout.txt | tail -12
