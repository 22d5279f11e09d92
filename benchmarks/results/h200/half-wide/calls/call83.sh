# fp16 operands wherever TF32's LSTM/GRU forwards exchange h: engine A/B (half_wide), the whole CUDA suite, theano/glample TF32 rows
set -u
export PYTHONUNBUFFERED=1 RNNBENCH_GIT_COMMIT=$1
d=$OUT/c83; mkdir -p $d
pack() { tar czf $OUT/c83.tgz -C $OUT c83; }
PYTHONPATH=src python3 -m rnnbench env > $d/env.txt 2>&1
timeout 175 python3 benchmarks/on_chip.py $d/ab --compare half_wide --budget 165 > $d/ab.txt 2>&1; echo "ab rc $?" >> $d/rc.txt; pack
timeout 290 bash scripts/cuda_tests.sh $d/suite 12 > $d/suite.txt 2>&1; echo "suite rc $?" >> $d/rc.txt; pack
t0=$(date +%s)
PYTHONPATH=src timeout 90 python3 -m rnnbench run --cell lstm,gru --batch-size 32,128 --seq-len 30 --input-size 512 --hidden-size 512 \
  --loss all_steps --dtype tf32 --lanes torch-nn,torch-nn-graph,triton,triton-graph --budget 0.2 --device cuda --out $d/theano512.jsonl > $d/theano512.log 2>&1
echo "theano512 rc $? $(( $(date +%s) - t0 )) s" >> $d/rc.txt
PYTHONPATH=src python3 -m rnnbench report $d/theano512.jsonl --no-published > $d/theano512.md 2>&1; gzip -f $d/theano512.jsonl; pack
tail -30 $d/ab.txt | cut -c1-220; tail -14 $d/suite.txt; tail -25 $d/theano512.md | cut -c1-200; cat $d/rc.txt
