# Recurrent dropout with the GRU's kernels: the dropout CUDA tests, the GRU's CUDA tests, then the probe
set -u
export PYTHONUNBUFFERED=1 RNNBENCH_GIT_COMMIT=$1
d=$OUT/c170; mkdir -p $d
PYTHONPATH=src python3 -m rnnbench env > $d/env.txt 2>&1
timeout 260 bash scripts/cuda_tests.sh $d/tests 14 "test_cuda_kernels_against_reference or gru" > $d/tests.txt 2>&1; echo "tests rc $?" >> $d/rc.txt
grep -h -B5 -A30 "^E   " $d/tests/shard.*.log > $d/failures.txt 2>/dev/null
timeout 200 env PYTHONPATH=src python3 benchmarks/results/h200/recurrent-dropout/probes/dropout.py $d/dropout.jsonl > $d/dropout.txt 2>&1; echo "probe rc $?" >> $d/rc.txt
rm -rf $d/tests/shard.??
tar czf $OUT/c170.tgz -C $OUT c170
cat $d/rc.txt; head -1 $d/tests.txt; grep -h "passed\|failed" $d/tests/shard.*.log | tail -14; grep FAILED $d/tests.txt | head; head -c 1500 $d/failures.txt; grep -v "Warn\|result = " $d/dropout.txt | tail -14
