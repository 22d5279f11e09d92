# H200 at the final reuse rule: A/B probe, the reuse CUDA test (and the apart mutation), the replay/train/graph subset, glample TF32 --runs 3
set -u
export RNNBENCH_GIT_COMMIT=$1 PYTHONUNBUFFERED=1
d=$OUT/r08; mkdir -p $d
pack() { tar czf $OUT/r08.tgz -C $OUT r08; }
PYTHONPATH=src python3 -m rnnbench env > $d/env.txt 2>&1
PYTHONPATH=src timeout 80 python3 benchmarks/results/h200/reuse/probes/reuse.py $d/reuse.jsonl > $d/reuse.txt 2>&1
echo "probe rc $?" >> $d/rc.txt; pack
K="take_back"
mut() {
  rm -rf /tmp/mut-$1 && mkdir -p /tmp/mut-$1 && cp -r src tests pyproject.toml /tmp/mut-$1/
  sed -i "$3" /tmp/mut-$1/src/rnnbench/ops/$2
  if cmp -s src/rnnbench/ops/$2 /tmp/mut-$1/src/rnnbench/ops/$2; then echo "$1: NOT APPLIED"; return; fi
  (cd /tmp/mut-$1 && timeout 100 python3 -m pytest -q -p no:cacheprovider tests/ops/test_cuda_kernels.py -k "$K" 2>&1 | grep -E "^FAILED|^E  .*assert|passed|failed" | sed "s/^/$1: /")
}
{ mut no-apart replayed_layer.py 's/got, apart=(1, 2))$/got)/' &
  wait; } > $d/mutations.txt 2>&1; pack
timeout 130 bash ab/subset.sh $d/tests 12 "replay or train or take_back or graph" tests > $d/tests.txt 2>&1; echo "tests rc $?" >> $d/rc.txt; pack
L="--lanes torch-nn,torch-nn-graph,triton,triton-graph --budget 0.2 --device cuda --runs 3"
PYTHONPATH=src timeout 80 python3 -m rnnbench run --cell rnn_tanh,lstm --batch-size 20 --seq-len 30 --input-size 100 \
  --hidden-size 100 --loss last_step --dtype tf32 $L --out $d/gl-tf32.jsonl > $d/gl-tf32.log 2>&1
echo "gl-tf32 rc $?" >> $d/rc.txt
PYTHONPATH=src python3 -m rnnbench report $d/gl-tf32.jsonl --no-published --standing > $d/gl-tf32.md 2>&1
gzip $d/*.jsonl; pack
cat $d/reuse.txt | cut -c1-170; cat $d/mutations.txt; tail -14 $d/tests.txt; grep -h "| triton " $d/gl-*.md; cat $d/rc.txt
