# the split products' paths in one process (eager steps, split and unsplit), then every seed suite with four lanes
set -u
export RNNBENCH_GIT_COMMIT=$1 PYTHONUNBUFFERED=1
d=$OUT/c59; mkdir -p $d
PYTHONPATH=src python3 -m rnnbench env > $d/env.txt 2>&1
PYTHONPATH=src timeout 200 python3 benchmarks/results/h100/fp16-products/probes/paths.py $d/paths.jsonl > $d/paths.txt 2>&1
echo "paths rc $?" >> $d/paths.txt
t0=$(date +%s)
PYTHONPATH=src timeout 360 python3 -m rnnbench run --suite glample-2016,fastrnns,flashrnn-2024,theano-cudnn-2016 \
  --lanes torch-nn,torch-nn-graph,triton,triton-graph --device cuda --out $d/seeds.jsonl > $d/seeds.log 2>&1
echo "seeds rc $? $(( $(date +%s) - t0 )) s" | tee $d/rc.txt
PYTHONPATH=src python3 -m rnnbench report $d/seeds.jsonl --no-published --standing > $d/seeds.md 2>&1
python3 benchmarks/results/h100/gated-fma/probes/ratios.py benchmarks/results/h100/x3-anatomy/seeds-cc9219b/seeds.jsonl.gz $d/seeds.jsonl > $d/seeds-against-cc9219b.txt 2>&1
gzip $d/*.jsonl $d/seeds.log
tar czf $OUT/c59.tgz -C $OUT c59
cat $d/paths.txt | grep -v Warn; grep -A12 "Standing" $d/seeds.md | head -14; tail -25 $d/seeds-against-cc9219b.txt
