# the whole CUDA suite at the producing default, then glample's and theano's suites with four lanes
set -u
export RNNBENCH_GIT_COMMIT=$1 PYTHONUNBUFFERED=1
d=$OUT/p02; mkdir -p $d
PYTHONPATH=src python3 -m rnnbench env > $d/env.txt 2>&1
timeout 400 bash scripts/cuda_tests.sh $d/cuda 8 > $d/cuda.txt 2>&1; echo "cuda rc $?" >> $d/rc.txt
t0=$(date +%s)
PYTHONPATH=src timeout 170 python3 -m rnnbench run --suite glample-2016 \
  --lanes torch-nn,torch-nn-graph,triton,triton-graph --device cuda --out $d/glample.jsonl > $d/glample.log 2>&1
echo "glample rc $? $(( $(date +%s) - t0 )) s" >> $d/rc.txt
PYTHONPATH=src python3 -m rnnbench report $d/glample.jsonl --no-published --standing > $d/glample.md 2>&1
tar czf $OUT/p02.tgz -C $OUT p02
tail -15 $d/cuda.txt; grep -A30 -i "standing\|speedup" $d/glample.md | head -50; cat $d/rc.txt
