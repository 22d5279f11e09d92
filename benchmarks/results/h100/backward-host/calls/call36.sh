# the replay's CUDA tests at the review mend, and where a training step's host time goes (parts.py)
set -u
export RNNBENCH_GIT_COMMIT=$1
d=$OUT/c36; mkdir -p $d
PYTHONPATH=src python3 -m rnnbench env > $d/env.txt 2>&1
timeout 200 bash ab/subset.sh $d/tests 8 "replay" tests/ops/test_cuda_kernels.py tests/test_cuda.py > $d/tests.txt 2>&1; echo "tests rc $?" >> $d/tests.txt
PYTHONPATH=src timeout 250 python3 benchmarks/results/h100/backward-host/probes/parts.py $d/parts > $d/parts.txt 2>&1
tar czf $OUT/c36.tgz -C $OUT c36
tail -n 12 $d/tests.txt; cat $d/parts.txt | tail -40
