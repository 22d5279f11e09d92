# the split products' CUDA tests at the new tree, then the products probe, old tree (a split's two
# launches an operand) and new (two a call) alternated
set -u
export RNNBENCH_GIT_COMMIT=$1
d=$OUT/c01; mkdir -p $d
PYTHONPATH=src python3 -m rnnbench env > $d/env.txt 2>&1
timeout 300 bash ab/subset.sh $d/tests 8 "split_gradients or projection or strict_fp32 or fp32s_tolerance or captured_gradients" tests/ops/test_cuda_kernels.py tests/test_cuda.py > $d/tests.txt 2>&1; echo "tests rc $?" >> $d/tests.txt
cp $d/tests/ids $d/test-ids.txt
for t in old new new old; do
  if [ $t = old ]; then s=build/old/src; else s=src; fi
  PYTHONPATH=$s timeout 60 python3 benchmarks/results/h100/fp16-products/probes/products.py $d/products.jsonl $t >> $d/products.txt 2>&1
  echo "$t rc $?" >> $d/products.txt
done
tar czf $OUT/c01.tgz -C $OUT c01
tail -10 $d/tests.txt; grep -v "^ \|Warning\|warn" $d/products.txt | cut -c1-300
