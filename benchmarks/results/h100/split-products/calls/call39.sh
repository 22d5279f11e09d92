# strict fp32 projection ours at any size: CUDA tests of the projection, and the engine A/B of trees (d21fcb2 vs this)
set -u
export RNNBENCH_GIT_COMMIT=$1
d=$OUT/c39; mkdir -p $d
PYTHONPATH=src python3 -m rnnbench env > $d/env.txt 2>&1
timeout 120 bash ab/subset.sh $d/tests 8 "projection" tests/ops/test_cuda_kernels.py tests/test_cuda.py > $d/tests.txt 2>&1; echo "tests rc $?" >> $d/tests.txt
OLD_COMMIT=d21fcb2 NEW_COMMIT=$1 timeout 420 bash benchmarks/trees_ab.sh build/old/src $d/ab \
  --cell lstm,gru --batch-size 32,128 --seq-len 30 --input-size hidden --hidden-size 512,1024 --dtype fp32 \
  --lanes torch-nn,triton --budget 0.2 --device cuda > $d/ab.txt 2>&1
tar czf $OUT/c39.tgz -C $OUT c39
tail -n 12 $d/tests.txt; cat $d/ab.txt; for n in 1 2; do grep -i "triton" $d/ab/compare-$n.md | head -20; done
