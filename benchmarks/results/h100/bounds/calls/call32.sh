# replay allocations by empty_strided: the in-process A/B, the whole CUDA suite
set -u
export RNNBENCH_GIT_COMMIT=$1
d=$OUT/c32; mkdir -p $d
PYTHONPATH=src python3 -m rnnbench env > $d/env.txt 2>&1
PYTHONPATH=src timeout 170 python3 benchmarks/results/h100/bounds/probes/strided.py $d/strided.jsonl > $d/strided.txt 2>&1
timeout 320 bash scripts/cuda_tests.sh $d/cuda 8 > $d/cuda.txt 2>&1; echo "suite rc $?" >> $d/cuda.txt
cp $d/cuda/alone.log $d/cuda-alone.log
tar czf $OUT/c32.tgz -C $OUT c32
cat $d/strided.txt; tail -n 15 $d/cuda.txt
