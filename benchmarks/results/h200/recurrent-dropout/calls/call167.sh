# Recurrent dropout's CUDA tests again, then the whole CUDA suite at this commit
set -u
export PYTHONUNBUFFERED=1 RNNBENCH_GIT_COMMIT=$1
d=$OUT/c167; mkdir -p $d
PYTHONPATH=src python3 -m rnnbench env > $d/env.txt 2>&1
timeout 150 bash scripts/cuda_tests.sh $d/dropout 8 "test_cuda_kernels_against_reference" > $d/dropout-tests.txt 2>&1; echo "dropout tests rc $?" >> $d/rc.txt
grep -h -B5 -A30 "^E   " $d/dropout/shard.*.log > $d/failures.txt 2>/dev/null
timeout 400 bash scripts/cuda_tests.sh $d/suite 14 > $d/suite.txt 2>&1; echo "suite rc $?" >> $d/rc.txt
grep -h -B5 -A20 "^E   " $d/suite/shard.*.log $d/suite/alone.log >> $d/failures.txt 2>/dev/null
tar czf $OUT/c167.tgz -C $OUT c167
cat $d/rc.txt; tail -4 $d/dropout-tests.txt; tail -20 $d/suite.txt; head -c 2500 $d/failures.txt
