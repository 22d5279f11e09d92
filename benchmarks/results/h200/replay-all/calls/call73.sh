# replay past hidden 128: every seed suite through the engine (four lanes), the whole CUDA suite
set -u
export PYTHONUNBUFFERED=1 RNNBENCH_GIT_COMMIT=$1
d=$OUT/c73; mkdir -p $d
pack() { tar czf $OUT/c73.tgz -C $OUT c73; }
PYTHONPATH=src python3 -m rnnbench env > $d/env.txt 2>&1
t0=$(date +%s)
PYTHONPATH=src timeout 300 python3 -m rnnbench run --suite glample-2016,fastrnns,flashrnn-2024,theano-cudnn-2016 \
  --lanes torch-nn,torch-nn-graph,triton,triton-graph --device cuda --out $d/seeds.jsonl > $d/seeds.log 2>&1
echo "seeds rc $? $(( $(date +%s) - t0 )) s" >> $d/rc.txt
PYTHONPATH=src python3 -m rnnbench report $d/seeds.jsonl --no-published --standing > $d/seeds.md 2>&1
gzip $d/seeds.jsonl $d/seeds.log; pack
timeout 235 bash scripts/cuda_tests.sh $d/suite 12 > $d/suite.txt 2>&1; echo "suite rc $?" >> $d/rc.txt; pack
grep -A12 "### Standing" $d/seeds.md | head -14; tail -14 $d/suite.txt; cat $d/rc.txt
