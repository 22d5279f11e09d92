# the split products' CUDA tests at HEAD (after ecd1c24's whole suite: line_max_kernel as one loop, the projection's condition reordered)
set -u
export RNNBENCH_GIT_COMMIT=$1
d=$OUT/c62; mkdir -p $d
PYTHONPATH=src python3 -m rnnbench env > $d/env.txt 2>&1
timeout 300 bash ab/subset.sh $d/tests 8 "split_gradients or projection or strict_fp32 or fp32s_tolerance or captured_gradients" tests/ops/test_cuda_kernels.py tests/test_cuda.py > $d/tests.txt 2>&1; echo "tests rc $?" >> $d/tests.txt
cp $d/tests/ids $d/test-ids.txt
tar czf $OUT/c62.tgz -C $OUT c62
cat $d/tests.txt
