# the seed suites at the split gradients (as ahead/seeds-1cc927c was made), against 1cc927c's run
set -u
export RNNBENCH_GIT_COMMIT=$1
d=$OUT/c46; mkdir -p $d
PYTHONPATH=src python3 -m rnnbench env > $d/env.txt 2>&1
t0=$(date +%s)
PYTHONPATH=src timeout 500 python3 -m rnnbench run --suite glample-2016,fastrnns,flashrnn-2024,theano-cudnn-2016 \
  --lanes torch-nn,torch-nn-graph,triton,triton-graph --device cuda --out $d/seeds.jsonl > $d/seeds.log 2>&1
echo "seeds rc $? $(( $(date +%s) - t0 )) s" | tee $d/rc.txt
PYTHONPATH=src python3 -m rnnbench report $d/seeds.jsonl --no-published --standing > $d/seeds.md 2>&1
python3 benchmarks/results/h100/gated-fma/probes/ratios.py benchmarks/results/h100/ahead/seeds-1cc927c/seeds.jsonl.gz $d/seeds.jsonl > $d/seeds-against-1cc927c.txt 2>&1
gzip $d/*.jsonl $d/seeds.log
tar czf $OUT/c46.tgz -C $OUT c46
grep -A6 "Standing against" $d/seeds.md | tail -5; tail -n 14 $d/seeds-against-1cc927c.txt
