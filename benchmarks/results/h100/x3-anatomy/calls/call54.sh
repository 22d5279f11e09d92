# the whole CUDA suite at the final tree
set -u
export RNNBENCH_GIT_COMMIT=$1
d=$OUT/c54; mkdir -p $d
PYTHONPATH=src python3 -m rnnbench env > $d/env.txt 2>&1
timeout 540 bash scripts/cuda_tests.sh $d/cuda 8 > $d/cuda.txt 2>&1; echo "cuda rc $?" >> $d/cuda.txt
tar czf $OUT/c54.tgz -C $OUT c54
tail -12 $d/cuda.txt
