# H200: replay.REUSE -- A/B probe, the new CUDA test under two mutations, the whole CUDA suite, glample TF32 --runs 3
set -u
export RNNBENCH_GIT_COMMIT=$1 PYTHONUNBUFFERED=1
d=$OUT/r05; mkdir -p $d
PYTHONPATH=src python3 -m rnnbench env > $d/env.txt 2>&1
PYTHONPATH=src timeout 150 python3 benchmarks/results/h200/reuse/probes/reuse.py $d/reuse.jsonl > $d/reuse.txt 2>&1
echo "probe rc $?" >> $d/rc.txt
K="take_back"
mut() {  # name sed-expression (on src/rnnbench/ops/replay.py)
  rm -rf /tmp/mut-$1 && mkdir -p /tmp/mut-$1 && cp -r src tests pyproject.toml /tmp/mut-$1/
  sed -i "$2" /tmp/mut-$1/src/rnnbench/ops/replay.py
  if cmp -s src/rnnbench/ops/replay.py /tmp/mut-$1/src/rnnbench/ops/replay.py; then echo "$1: NOT APPLIED"; return; fi
  (cd /tmp/mut-$1 && timeout 150 python3 -m pytest -q -p no:cacheprovider tests/ops/test_cuda_kernels.py -k "$K" 2>&1 | grep -E "^FAILED|passed|failed" | sed "s/^/$1: /")
}
{ mut always-unheld 's/^    return (_references(tensors, j) == _UNHELD_REFERENCES$/    return True or (_references(tensors, j) == _UNHELD_REFERENCES/' &
  mut no-reuse 's/^REUSE = True$/REUSE = False/' &
  (timeout 150 python3 -m pytest -q -p no:cacheprovider tests/ops/test_cuda_kernels.py -k "$K" 2>&1 | tail -1 | sed "s/^/unmutated: /") &
  wait; } > $d/mutations.txt 2>&1
t0=$(date +%s)
timeout 330 bash scripts/cuda_tests.sh $d/cuda 12 > $d/cuda.txt 2>&1; echo "cuda rc $? $(( $(date +%s) - t0 )) s" >> $d/rc.txt
L="--lanes torch-nn,torch-nn-graph,triton,triton-graph --budget 0.2 --device cuda --runs 3"
PYTHONPATH=src timeout 100 python3 -m rnnbench run --cell rnn_tanh,lstm --batch-size 20 --seq-len 30 --input-size 100 \
  --hidden-size 100 --loss last_step --dtype tf32 $L --out $d/gl-tf32.jsonl > $d/gl-tf32.log 2>&1
echo "gl-tf32 rc $? $(( $(date +%s) - t0 )) s" >> $d/rc.txt
PYTHONPATH=src python3 -m rnnbench report $d/gl-tf32.jsonl --no-published --standing > $d/gl-tf32.md 2>&1
gzip $d/*.jsonl
tar czf $OUT/r05.tgz -C $OUT r05
cat $d/reuse.txt | tail -12; cat $d/mutations.txt; tail -4 $d/cuda.txt; grep -h "| triton " $d/gl-*.md; cat $d/rc.txt
