# leaner replayed call: in-process A/B against afc7166 and 0e8f85d, the engine at glample's and theano's hidden-128 cases (--runs 3), the whole CUDA suite
set -u
export PYTHONUNBUFFERED=1 RNNBENCH_GIT_COMMIT=$1
d=$OUT/c68; mkdir -p $d
pack() { tar czf $OUT/c68.tgz -C $OUT c68; }
PYTHONPATH=src python3 -m rnnbench env > $d/env.txt 2>&1
P=benchmarks/results/h200/lean-replay/probes/against.py
PYTHONPATH=src timeout 150 python3 $P ab/old/src $d/against-afc7166.jsonl > $d/against-afc7166.txt 2>&1; echo "against afc7166 rc $?" >> $d/rc.txt; pack
PYTHONPATH=src timeout 150 python3 $P ab/old0/src $d/against-0e8f85d.jsonl > $d/against-0e8f85d.txt 2>&1; echo "against 0e8f85d rc $?" >> $d/rc.txt; pack
L="--lanes torch-nn,torch-nn-graph,triton,triton-graph --budget 0.2 --device cuda --runs 3"
PYTHONPATH=src timeout 130 python3 -m rnnbench run --cell rnn_tanh,lstm --batch-size 20 --seq-len 30 --input-size 100 \
  --hidden-size 100 --loss last_step --dtype tf32,fp32 $L --out $d/glample.jsonl > $d/glample.log 2>&1; echo "glample rc $?" >> $d/rc.txt
PYTHONPATH=src timeout 200 python3 -m rnnbench run --cell lstm,gru --batch-size 32,128 --seq-len 30 --input-size 128 \
  --hidden-size 128 --loss all_steps --dtype tf32,fp32 $L --out $d/theano.jsonl > $d/theano.log 2>&1; echo "theano rc $?" >> $d/rc.txt
for f in glample theano; do PYTHONPATH=src python3 -m rnnbench report $d/$f.jsonl --no-published --standing > $d/$f.md 2>&1; done
gzip $d/*.jsonl; pack
timeout 260 bash scripts/cuda_tests.sh $d/suite 12 > $d/suite.txt 2>&1; echo "suite rc $?" >> $d/rc.txt; pack
cut -c1-200 $d/against-*.txt; grep -h "| triton" $d/glample.md $d/theano.md | head -40; tail -14 $d/suite.txt; cat $d/rc.txt
