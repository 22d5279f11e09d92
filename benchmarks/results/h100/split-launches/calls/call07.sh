# after the projection's captured limit moved to 4e9: the CUDA tests of the split products, the
# projection, strict fp32 and the gradients' path
set -u
export RNNBENCH_GIT_COMMIT=$1
d=$OUT/c07; mkdir -p $d
PYTHONPATH=src python3 -m rnnbench env > $d/env.txt 2>&1
timeout 300 bash ab/subset.sh $d/tests 8 "split or projection or strict_fp32 or fp32s_tolerance or eagerly_and_captured" tests/ops/test_cuda_kernels.py tests/test_cuda.py > $d/tests.txt 2>&1; echo "tests rc $?" >> $d/tests.txt
cp $d/tests/ids $d/test-ids.txt
rm -rf $d/tests
tar czf $OUT/c07.tgz -C $OUT c07
cat $d/tests.txt
