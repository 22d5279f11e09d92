# review: the split products' CUDA tests at the mend, then with the chunks summed in the tensor core (must fail)
set -u
export RNNBENCH_GIT_COMMIT=$1
d=$OUT/c47; mkdir -p $d
PYTHONPATH=src python3 -m rnnbench env > $d/env.txt 2>&1
K="split_gradients or hidden_1024 or layer_gradients or strict_fp32 or projection"
timeout 200 bash ab/subset.sh $d/tests 8 "$K" tests/ops/test_cuda_kernels.py tests/test_cuda.py > $d/tests.txt 2>&1; echo "tests rc $?" >> $d/tests.txt
sed -i 's/chunk = tl.dot(a_l, b_h, input_precision="tf32")/chunk = tl.dot(a_l, b_h, acc, input_precision="tf32")/; s/        acc += chunk/        acc = chunk/' src/rnnbench/ops/split_products.py
grep -n "acc = chunk\|b_h, acc" src/rnnbench/ops/split_products.py > $d/mutation.txt
timeout 120 bash ab/subset.sh $d/broken 8 "split_gradients_on" tests/ops/test_cuda_kernels.py > $d/broken.txt 2>&1; echo "broken rc $?" >> $d/broken.txt
tar czf $OUT/c47.tgz -C $OUT c47
tail -n 12 $d/tests.txt; cat $d/mutation.txt; tail -n 14 $d/broken.txt
