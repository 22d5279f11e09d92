# The gate split below hidden 768 at 64 batch rows, against split-K
set -u
export PYTHONUNBUFFERED=1 RNNBENCH_GIT_COMMIT=$1 PYTHONPATH=src
d=$OUT/c105; mkdir -p $d
python3 -m rnnbench env > $d/env.txt 2>&1
timeout 300 python3 benchmarks/plan_sweep.py $d --cases gate_split_narrow --budget 270 > $d/sweep.txt 2>&1; echo "sweep rc $?" >> $d/rc.txt
python3 benchmarks/plan_ratios.py $d/plan_sweep-gate_split_narrow.jsonl default backward_gate_split=True,backward_split_k=False,backward_w_resident=False > $d/ratios.txt 2>&1
tar czf $OUT/c105.tgz -C $OUT c105
cat $d/ratios.txt | cut -c1-200; grep -c error $d/plan_sweep-gate_split_narrow.jsonl; cat $d/rc.txt
