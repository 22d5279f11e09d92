# Recurrent dropout: its CUDA tests, then the probe (triton against the loop of torch's cells)
set -u
export PYTHONUNBUFFERED=1 RNNBENCH_GIT_COMMIT=$1
d=$OUT/c166; mkdir -p $d
PYTHONPATH=src python3 -m rnnbench env > $d/env.txt 2>&1
timeout 240 bash scripts/cuda_tests.sh $d/tests 8 "test_cuda_kernels_against_reference" > $d/tests.txt 2>&1; echo "tests rc $?" >> $d/rc.txt
grep -h -B2 -A30 "^E   " $d/tests/shard.*.log > $d/failures.txt 2>/dev/null
timeout 300 env PYTHONPATH=src python3 benchmarks/results/h200/recurrent-dropout/probes/dropout.py $d/dropout.jsonl > $d/dropout.txt 2>&1; echo "probe rc $?" >> $d/rc.txt
tar czf $OUT/c166.tgz -C $OUT c166
cat $d/rc.txt; tail -12 $d/tests.txt; head -c 3000 $d/failures.txt; grep -v Warn $d/dropout.txt | tail -14
