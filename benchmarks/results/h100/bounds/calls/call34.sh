# the eager call without the compiler's wrapper: the in-process A/B, and the CUDA tests of the module's calls
set -u
export RNNBENCH_GIT_COMMIT=$1
d=$OUT/c34; mkdir -p $d
PYTHONPATH=src python3 -m rnnbench env > $d/env.txt 2>&1
PYTHONPATH=src timeout 150 python3 benchmarks/results/h100/bounds/probes/unwrapped.py $d/unwrapped.jsonl > $d/unwrapped.txt 2>&1
timeout 230 bash ab/subset.sh $d/tests 8 "replay or compiled or graph_lane or every_builtin_lane" tests/ops/test_cuda_kernels.py tests/test_cuda.py > $d/tests.txt 2>&1; echo "tests rc $?" >> $d/tests.txt
tar czf $OUT/c34.tgz -C $OUT c34
cat $d/unwrapped.txt; tail -n 14 $d/tests.txt
