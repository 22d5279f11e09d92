# mutations of the new CUDA gates (each on a copy of the tree), the strict fp32 cases, every seed suite with four lanes
set -u
export RNNBENCH_GIT_COMMIT=$1 PYTHONUNBUFFERED=1
d=$OUT/c61; mkdir -p $d
PYTHONPATH=src python3 -m rnnbench env > $d/env.txt 2>&1
mut() {  # name file sed-expression
  rm -rf /tmp/mut-$1 && mkdir -p /tmp/mut-$1 && cp -r src tests pyproject.toml /tmp/mut-$1/
  sed -i "$3" /tmp/mut-$1/src/rnnbench/ops/$2
  if cmp -s src/rnnbench/ops/$2 /tmp/mut-$1/src/rnnbench/ops/$2; then echo "$1: NOT APPLIED"; return; fi
  (cd /tmp/mut-$1 && timeout 150 python3 -m pytest -q -p no:cacheprovider tests/ops/test_cuda_kernels.py -k "captured_gradients or split_gradients_on_the_gpu or projection_from_split or whole_tiles_is_ours" 2>&1 | tail -1 | sed "s/^/$1: /")
}
{ mut eager-only gradients.py 's/captured = x.is_cuda and torch.cuda.is_current_stream_capturing()/captured = False/' &
  mut no-small-product split_products.py 's/chunk = tl.dot(a_h, b_l, chunk)/chunk = chunk/' &
  mut no-scales split_products.py 's/acc = acc \* tl.load(a_scale_ptr + m)\[:, None\] \* /acc = acc * /' &
  timeout 150 python3 -m pytest -q -p no:cacheprovider tests/ops/test_cuda_kernels.py -k "captured_gradients or split_gradients_on_the_gpu or projection_from_split or whole_tiles_is_ours" 2>&1 | tail -1 | sed "s/^/unmutated: /" &
  wait; } > $d/mutations.txt 2>&1
PYTHONPATH=src timeout 150 python3 -m rnnbench run --cell lstm,gru --batch-size 32,128 --seq-len 30 --input-size hidden --hidden-size 128,512,1024 --dtype fp32 --lanes torch-nn,triton --budget 0.2 --device cuda --out $d/th.jsonl > $d/th.log 2>&1; echo "th rc $?" >> $d/rc.txt
PYTHONPATH=src python3 -m rnnbench report $d/th.jsonl --no-published --standing > $d/th.md 2>&1
t0=$(date +%s)
PYTHONPATH=src timeout 330 python3 -m rnnbench run --suite glample-2016,fastrnns,flashrnn-2024,theano-cudnn-2016 \
  --lanes torch-nn,torch-nn-graph,triton,triton-graph --device cuda --out $d/seeds.jsonl > $d/seeds.log 2>&1
echo "seeds rc $? $(( $(date +%s) - t0 )) s" >> $d/rc.txt
PYTHONPATH=src python3 -m rnnbench report $d/seeds.jsonl --no-published --standing > $d/seeds.md 2>&1
python3 benchmarks/results/h100/gated-fma/probes/ratios.py benchmarks/results/h100/x3-anatomy/seeds-cc9219b/seeds.jsonl.gz $d/seeds.jsonl > $d/seeds-against-cc9219b.txt 2>&1
gzip $d/*.jsonl $d/*.log
tar czf $OUT/c61.tgz -C $OUT c61
cat $d/mutations.txt $d/rc.txt; grep -A6 "Standing" $d/seeds.md | head -8
