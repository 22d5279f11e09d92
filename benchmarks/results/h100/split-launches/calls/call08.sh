# after the review's mend (64-bit offsets in the split kernels): the CUDA tests of the split products' users
set -u
export RNNBENCH_GIT_COMMIT=$1
d=$OUT/c08; mkdir -p $d
PYTHONPATH=src python3 -m rnnbench env > $d/env.txt 2>&1
timeout 200 bash ab/subset.sh $d/tests 8 "split_gradients or eagerly_and_captured or projection or strict_fp32_layer_at_hidden_1024" tests/ops/test_cuda_kernels.py tests/test_cuda.py > $d/tests.txt 2>&1; echo "tests rc $?" >> $d/tests.txt
cp $d/tests/ids $d/test-ids.txt
rm -rf $d/tests
tar czf $OUT/c08.tgz -C $OUT c08
cat $d/tests.txt
# call 09, on the same warm machine, its command given inline:
#   d=$OUT/c09; mkdir -p $d; export RNNBENCH_GIT_COMMIT=464f074; PYTHONPATH=src python3 -m rnnbench env > $d/env.txt 2>&1
#   timeout 110 bash ab/subset.sh $d/tests 8 "split or projection or strict_fp32 or fp32s_tolerance or eagerly_and_captured" \
#     tests/ops/test_cuda_kernels.py tests/test_cuda.py > $d/tests.txt 2>&1; echo "tests rc $?" >> $d/tests.txt
