# gated producers landed: theano's and glample's hidden 100-128 cases through the engine (four lanes), the whole CUDA suite
set -u
export PYTHONUNBUFFERED=1 RNNBENCH_GIT_COMMIT=$1
d=$OUT/c79; mkdir -p $d
pack() { tar czf $OUT/c79.tgz -C $OUT c79; }
PYTHONPATH=src python3 -m rnnbench env > $d/env.txt 2>&1
L=torch-nn,torch-nn-graph,triton,triton-graph
PYTHONPATH=src timeout 130 python3 -m rnnbench run --cell lstm,gru --batch-size 32,128 --seq-len 30 --input-size 128 --hidden-size 128 \
  --loss all_steps --dtype fp32,tf32 --lanes $L --budget 0.2 --device cuda --out $d/theano.jsonl > $d/theano.log 2>&1; echo "theano rc $?" >> $d/rc.txt
PYTHONPATH=src timeout 100 python3 -m rnnbench run --cell rnn_tanh,lstm --batch-size 20 --seq-len 30 --input-size 100 --hidden-size 100 \
  --loss last_step --dtype fp32,tf32 --lanes $L --budget 0.2 --device cuda --out $d/glample.jsonl > $d/glample.log 2>&1; echo "glample rc $?" >> $d/rc.txt
for r in theano glample; do PYTHONPATH=src python3 -m rnnbench report $d/$r.jsonl --no-published --standing > $d/$r.md 2>&1; gzip $d/$r.jsonl; done; pack
timeout 290 bash scripts/cuda_tests.sh $d/suite 12 > $d/suite.txt 2>&1; echo "suite rc $?" >> $d/rc.txt; pack
grep -h "| triton \|^### " $d/theano.md $d/glample.md | cut -c1-200; tail -16 $d/suite.txt | cut -c1-200; cat $d/rc.txt
