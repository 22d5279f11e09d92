# The stand-in step's product-only variants beside tma-step's kernel; strict fp32 beside cuDNN at unmeasured shapes
set -u
export PYTHONUNBUFFERED=1 RNNBENCH_GIT_COMMIT=$1 PYTHONPATH=src
d=$OUT/c150; mkdir -p $d
pack() { tar czf $OUT/c150.tgz -C $OUT c150; }
python3 -m rnnbench env > $d/env.txt 2>&1
t0=$(date +%s)
timeout 150 python3 benchmarks/results/h200/step-parts/probes/step_parts.py $d/probe --second > $d/probe.txt 2>&1
echo "probe rc $? $(( $(date +%s) - t0 )) s" >> $d/rc.txt; pack
L="--mode forward,train --lanes torch-nn,triton --budget 0.2 --device cuda --dtype fp32 --seq-len 50 --input-size hidden"
t0=$(date +%s)
timeout 260 bash -c "python3 -m rnnbench run --cell lstm,gru --batch-size 1024 --hidden-size 1500 $L --out $d/engine.jsonl &&
  python3 -m rnnbench run --cell lstm,gru --batch-size 132 --hidden-size 4096 $L --out $d/engine.jsonl &&
  python3 -m rnnbench run --cell rnn_tanh --batch-size 1024 --hidden-size 2048 $L --out $d/engine.jsonl" > $d/engine.log 2>&1
echo "engine rc $? $(( $(date +%s) - t0 )) s" >> $d/rc.txt
python3 -m rnnbench report $d/engine.jsonl --no-published > $d/engine.md 2>&1; gzip -f $d/engine.log; pack
cut -c1-900 $d/probe.txt; grep -B2 -A10 "Train (µs)" $d/engine.md | cut -c1-150 | head -40; cat $d/rc.txt
