# the whole CUDA suite
set -u
export RNNBENCH_GIT_COMMIT=$1
d=$OUT/c05; mkdir -p $d
PYTHONPATH=src python3 -m rnnbench env > $d/env.txt 2>&1
t0=$(date +%s)
timeout 570 bash scripts/cuda_tests.sh $d/cuda 8 > $d/cuda.txt 2>&1; echo "cuda rc $? $(( $(date +%s) - t0 )) s" >> $d/cuda.txt
tar czf $OUT/c05.tgz -C $OUT c05
tail -15 $d/cuda.txt
