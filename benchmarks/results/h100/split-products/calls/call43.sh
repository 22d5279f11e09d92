# split gradients: their CUDA tests, and the engine A/B of trees (f2f8670 vs this) at theano's strict fp32 hidden 1024
set -u
export RNNBENCH_GIT_COMMIT=$1
d=$OUT/c43; mkdir -p $d
PYTHONPATH=src python3 -m rnnbench env > $d/env.txt 2>&1
timeout 200 bash ab/subset.sh $d/tests 8 "split_gradients or hidden_1024 or layer_gradients or strict_fp32 or projection" tests/ops/test_cuda_kernels.py tests/test_cuda.py > $d/tests.txt 2>&1; echo "tests rc $?" >> $d/tests.txt
OLD_COMMIT=f2f8670 NEW_COMMIT=$1 timeout 330 bash benchmarks/trees_ab.sh build/old/src $d/ab \
  --cell lstm,gru --batch-size 32,128 --seq-len 30 --input-size hidden --hidden-size 1024 --dtype fp32 --mode train \
  --lanes torch-nn,triton --budget 0.2 --device cuda > $d/ab.txt 2>&1
tar czf $OUT/c43.tgz -C $OUT c43
tail -n 14 $d/tests.txt; cat $d/ab.txt; for n in 1 2; do grep -i "triton" $d/ab/compare-$n.md | cut -c1-120; done
