# Stacked modules replayed layer by layer: the CUDA tests of the replays, the A/B probe, the engine at 2 layers
set -u
export PYTHONUNBUFFERED=1 RNNBENCH_GIT_COMMIT=$1
d=$OUT/c161; mkdir -p $d
PYTHONPATH=src python3 -m rnnbench env > $d/env.txt 2>&1
timeout 240 bash scripts/cuda_tests.sh $d/tests 8 "stacked or replay or replayed" > $d/tests.txt 2>&1; echo "tests rc $?" >> $d/rc.txt
timeout 200 env PYTHONPATH=src python3 benchmarks/results/h200/stacks/probes/stacks.py $d/stacks.jsonl > $d/stacks.txt 2>&1; echo "probe rc $?" >> $d/rc.txt
timeout 120 env PYTHONPATH=src python3 -m rnnbench run --cell lstm,gru,rnn_tanh --batch-size 32 --seq-len 30 --input-size hidden \
  --hidden-size 128 --num-layers 2 --dtype tf32,bf16 --lanes torch-nn,triton,torch-nn-graph,triton-graph --device cuda \
  --out $d/engine.jsonl > $d/engine.log 2>&1; echo "engine rc $?" >> $d/rc.txt
gzip -f $d/engine.log 2>/dev/null
tar czf $OUT/c161.tgz -C $OUT c161
cat $d/rc.txt; cat $d/tests.txt | tail -12; cut -c1-240 $d/stacks.txt; tail -3 $d/engine.log 2>/dev/null
