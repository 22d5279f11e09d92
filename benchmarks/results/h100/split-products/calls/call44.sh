# the whole CUDA suite (the strict fp32 projection and split gradients)
set -u
export RNNBENCH_GIT_COMMIT=$1
d=$OUT/c44; mkdir -p $d
PYTHONPATH=src python3 -m rnnbench env > $d/env.txt 2>&1
timeout 540 bash scripts/cuda_tests.sh $d/cuda 8 > $d/cuda.txt 2>&1; echo "cuda rc $?" >> $d/cuda.txt
tar czf $OUT/c44.tgz -C $OUT c44
tail -n 20 $d/cuda.txt
