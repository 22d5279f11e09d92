# fp16 split products: their CUDA tests, then the products probe, old tree (3xTF32) and new (3xFP16) alternated
set -u
export RNNBENCH_GIT_COMMIT=$1
d=$OUT/c57; mkdir -p $d
PYTHONPATH=src python3 -m rnnbench env > $d/env.txt 2>&1
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu --format=csv >> $d/env.txt 2>&1
timeout 240 bash ab/subset.sh $d/tests 8 "split_gradients or projection or strict_fp32 or fp32s_tolerance" tests/ops/test_cuda_kernels.py tests/test_cuda.py > $d/tests.txt 2>&1; echo "tests rc $?" >> $d/tests.txt
for t in old new new old; do
  if [ $t = old ]; then s=build/old/src; else s=src; fi
  PYTHONPATH=$s timeout 120 python3 benchmarks/results/h100/fp16-products/probes/products.py $d/products.jsonl $t >> $d/products.txt 2>&1
  echo "$t rc $?" >> $d/products.txt
done
tar czf $OUT/c57.tgz -C $OUT c57
tail -8 $d/tests.txt; grep -v "^ \|Warning\|warn" $d/products.txt | cut -c1-400
