# mutations of the split products and their path (each on a copy of the tree), the strict fp32
# cases at theano's grid, every seed suite with four lanes
set -u
export RNNBENCH_GIT_COMMIT=$1 PYTHONUNBUFFERED=1
d=$OUT/c06; mkdir -p $d
PYTHONPATH=src python3 -m rnnbench env > $d/env.txt 2>&1
K="split_gradients or eagerly_and_captured or projection_from_split or strict_fp32_layer_at_hidden_1024"
mut() {  # name file sed-expression
  rm -rf /tmp/mut-$1 && mkdir -p /tmp/mut-$1 && cp -r src tests pyproject.toml /tmp/mut-$1/
  sed -i "$3" /tmp/mut-$1/src/rnnbench/ops/$2
  if cmp -s src/rnnbench/ops/$2 /tmp/mut-$1/src/rnnbench/ops/$2; then echo "$1: NOT APPLIED"; return; fi
  (cd /tmp/mut-$1 && timeout 200 python3 -m pytest -q -p no:cacheprovider tests/ops/test_cuda_kernels.py -k "$K" 2>&1 | tail -1 | sed "s/^/$1: /")
}
{ mut eager-tiles-back gradients.py 's/    return 2 \* rows \* gate_width \* (2 \* input_size + hidden_size) >= SPLIT_MIN_FLOP/    return 2 * rows * gate_width * (2 * input_size + hidden_size) >= SPLIT_MIN_FLOP and (torch.cuda.is_current_stream_capturing() or gate_width * min(input_size, hidden_size) >= 128 * 128 * 128)/' &
  mut third-operand-reads-seconds-partials split_products.py 's/_split(x2_ptr, part_ptr + P2/_split(x2_ptr, part_ptr + P1/' &
  mut second-product-reads-firsts-a split_products.py 's/_split_product(a_ptr + A1 \* BLOCK/_split_product(a_ptr + A0 * BLOCK/' &
  (timeout 200 python3 -m pytest -q -p no:cacheprovider tests/ops/test_cuda_kernels.py -k "$K" 2>&1 | tail -1 | sed "s/^/unmutated: /") &
  wait; } > $d/mutations.txt 2>&1
PYTHONPATH=src timeout 150 python3 -m rnnbench run --cell lstm,gru --batch-size 32,128 --seq-len 30 --input-size hidden --hidden-size 128,512,1024 --dtype fp32 --lanes torch-nn,triton --budget 0.2 --device cuda --out $d/th.jsonl > $d/th.log 2>&1; echo "th rc $?" >> $d/rc.txt
PYTHONPATH=src python3 -m rnnbench report $d/th.jsonl --no-published --standing > $d/th.md 2>&1
t0=$(date +%s)
PYTHONPATH=src timeout 300 python3 -m rnnbench run --suite glample-2016,fastrnns,flashrnn-2024,theano-cudnn-2016 \
  --lanes torch-nn,torch-nn-graph,triton,triton-graph --device cuda --out $d/seeds.jsonl > $d/seeds.log 2>&1
echo "seeds rc $? $(( $(date +%s) - t0 )) s" >> $d/rc.txt
PYTHONPATH=src python3 -m rnnbench report $d/seeds.jsonl --no-published --standing > $d/seeds.md 2>&1
python3 benchmarks/results/h100/gated-fma/probes/ratios.py benchmarks/results/h100/fp16-products/final-ecd1c24/seeds.jsonl.gz $d/seeds.jsonl > $d/seeds-against-ecd1c24.txt 2>&1
gzip $d/*.jsonl $d/*.log
tar czf $OUT/c06.tgz -C $OUT c06
cat $d/mutations.txt $d/rc.txt; grep -A6 "Standing" $d/seeds.md | head -8
