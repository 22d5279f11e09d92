# every seed suite with four lanes at HEAD (the standing after 2e47e56's producers and 87743ab's fp16 operands)
set -u
export PYTHONUNBUFFERED=1 RNNBENCH_GIT_COMMIT=$1
d=$OUT/c86; mkdir -p $d
pack() { tar czf $OUT/c86.tgz -C $OUT c86; }
PYTHONPATH=src python3 -m rnnbench env > $d/env.txt 2>&1
t0=$(date +%s)
PYTHONPATH=src timeout 420 python3 -m rnnbench run --suite glample-2016,fastrnns,flashrnn-2024,theano-cudnn-2016 \
  --lanes torch-nn,torch-nn-graph,triton,triton-graph --device cuda --out $d/seeds.jsonl > $d/seeds.log 2>&1
echo "seeds rc $? $(( $(date +%s) - t0 )) s" >> $d/rc.txt
PYTHONPATH=src python3 -m rnnbench report $d/seeds.jsonl --no-published --standing > $d/seeds.md 2>&1
gzip -f $d/seeds.jsonl $d/seeds.log; pack
grep -A14 "### Standing" $d/seeds.md | head -16; cat $d/rc.txt
