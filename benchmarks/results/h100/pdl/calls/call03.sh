# after the PDL default and projection.splits_pay's tidy: the split/projection CUDA tests, every seed suite with four lanes beside c8033d8's run
set -u
export RNNBENCH_GIT_COMMIT=$1 PYTHONUNBUFFERED=1
d=$OUT/p03; mkdir -p $d
PYTHONPATH=src python3 -m rnnbench env > $d/env.txt 2>&1
timeout 150 bash ab/subset.sh $d/tests 8 "split or projection or strict_fp32" tests > $d/tests.txt 2>&1; echo "tests rc $?" >> $d/rc.txt
t0=$(date +%s)
PYTHONPATH=src timeout 330 python3 -m rnnbench run --suite glample-2016,fastrnns,flashrnn-2024,theano-cudnn-2016 \
  --lanes torch-nn,torch-nn-graph,triton,triton-graph --device cuda --out $d/seeds.jsonl > $d/seeds.log 2>&1
echo "seeds rc $? $(( $(date +%s) - t0 )) s" >> $d/rc.txt
PYTHONPATH=src python3 -m rnnbench report $d/seeds.jsonl --no-published --standing > $d/seeds.md 2>&1
python3 benchmarks/results/h100/gated-fma/probes/ratios.py benchmarks/results/h100/split-launches/final-c8033d8/seeds.jsonl.gz $d/seeds.jsonl > $d/seeds-against-c8033d8.txt 2>&1
gzip $d/*.jsonl $d/*.log
tar czf $OUT/p03.tgz -C $OUT p03
tail -3 $d/tests.txt; cat $d/rc.txt; grep -A6 "Standing" $d/seeds.md | head -8
