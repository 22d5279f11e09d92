# the seed suites with 3xFP16 (strict fp32 streamed forwards), against 4e4bbf7's run
set -u
export RNNBENCH_GIT_COMMIT=$1
d=$OUT/c53; mkdir -p $d
PYTHONPATH=src python3 -m rnnbench env > $d/env.txt 2>&1
t0=$(date +%s)
PYTHONPATH=src timeout 500 python3 -m rnnbench run --suite glample-2016,fastrnns,flashrnn-2024,theano-cudnn-2016 \
  --lanes torch-nn,torch-nn-graph,triton,triton-graph --device cuda --out $d/seeds.jsonl > $d/seeds.log 2>&1
echo "seeds rc $? $(( $(date +%s) - t0 )) s" | tee $d/rc.txt
PYTHONPATH=src python3 -m rnnbench report $d/seeds.jsonl --no-published --standing > $d/seeds.md 2>&1
python3 benchmarks/results/h100/gated-fma/probes/ratios.py benchmarks/results/h100/split-products/seeds-4e4bbf7/seeds.jsonl.gz $d/seeds.jsonl > $d/seeds-against-4e4bbf7.txt 2>&1
gzip $d/*.jsonl $d/seeds.log
tar czf $OUT/c53.tgz -C $OUT c53
grep -A6 "Standing against" $d/seeds.md | tail -5; tail -n 14 $d/seeds-against-4e4bbf7.txt
