# the seed suites at this tree (as floor-6679ff1/seeds), then the outputs-ahead probe at the final form
set -u
export RNNBENCH_GIT_COMMIT=$1
d=$OUT/c27; mkdir -p $d
PYTHONPATH=src python3 -m rnnbench env > $d/env.txt 2>&1
t0=$(date +%s)
PYTHONPATH=src timeout 390 python3 -m rnnbench run --suite glample-2016,fastrnns,flashrnn-2024,theano-cudnn-2016 \
  --lanes torch-nn,torch-nn-graph,triton,triton-graph --device cuda --out $d/seeds.jsonl > $d/seeds.log 2>&1
echo "seeds rc $? $(( $(date +%s) - t0 )) s"
PYTHONPATH=src python3 -m rnnbench report $d/seeds.jsonl --no-published --standing > $d/seeds.md 2>&1
python3 benchmarks/results/h100/gated-fma/probes/ratios.py benchmarks/results/h100/call-floor/floor-6679ff1/seeds.jsonl.gz $d/seeds.jsonl > $d/seeds-against-6679ff1.txt 2>&1
PYTHONPATH=src timeout 180 python3 benchmarks/results/h100/ahead/probes/ahead.py $d/ahead.jsonl > $d/ahead.txt 2>&1
echo "probe rc $? $(( $(date +%s) - t0 )) s"
gzip $d/*.jsonl $d/seeds.log
tar czf $OUT/c27.tgz -C $OUT c27
grep -A6 "Standing against" $d/seeds.md | tail -5; tail -n 12 $d/seeds-against-6679ff1.txt; cat $d/ahead.txt | cut -c1-120
