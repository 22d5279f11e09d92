# The gate split past hidden 1024: where does it beat the transpose plan?
set -u
export PYTHONUNBUFFERED=1 RNNBENCH_GIT_COMMIT=$1 PYTHONPATH=src
d=$OUT/c103; mkdir -p $d
python3 -m rnnbench env > $d/env.txt 2>&1
timeout 520 python3 benchmarks/plan_sweep.py $d --cases gate_split_wide --budget 480 > $d/sweep.txt 2>&1; echo "sweep rc $?" >> $d/rc.txt
python3 benchmarks/plan_ratios.py $d/plan_sweep-gate_split_wide.jsonl default backward_gate_split=True > $d/ratios.txt 2>&1
tar czf $OUT/c103.tgz -C $OUT c103
cat $d/ratios.txt | cut -c1-200; cat $d/rc.txt
