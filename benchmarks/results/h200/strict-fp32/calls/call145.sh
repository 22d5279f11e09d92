# Strict fp32 past 2^20: the engine beside cuDNN at the default plans, then plan forms of the kernels alone
set -u
export PYTHONUNBUFFERED=1 RNNBENCH_GIT_COMMIT=$1 PYTHONPATH=src
d=$OUT/c145; mkdir -p $d
pack() { tar czf $OUT/c145.tgz -C $OUT c145; }
python3 -m rnnbench env > $d/env.txt 2>&1
t0=$(date +%s)
timeout 150 python3 -m rnnbench run --cell lstm,gru --batch-size 1024 --seq-len 50 --input-size hidden --hidden-size 2048 \
  --dtype fp32 --mode forward,train --lanes torch-nn,triton --budget 0.2 --device cuda --out $d/engine.jsonl > $d/engine.log 2>&1
echo "engine rc $? $(( $(date +%s) - t0 )) s" >> $d/rc.txt; pack
t0=$(date +%s)
timeout 300 python3 benchmarks/plan_sweep.py $d/sweep --cases strict_fp32_wide --budget 280 > $d/sweep.txt 2>&1
echo "sweep rc $? $(( $(date +%s) - t0 )) s" >> $d/rc.txt
python3 -m rnnbench report $d/engine.jsonl --no-published > $d/engine.md 2>&1
gzip -f $d/engine.log; pack
tail -n 22 $d/sweep.txt; grep -A12 "ms_per_batch\|µs" $d/engine.md | head -30; cat $d/rc.txt
