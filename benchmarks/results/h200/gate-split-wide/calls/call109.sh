# The gate split past hidden 2048: kernels alone (plan_sweep), then the engine's A/B verified against float64
set -u
export PYTHONUNBUFFERED=1 RNNBENCH_GIT_COMMIT=$1 PYTHONPATH=src
d=$OUT/c109; mkdir -p $d
pack() { tar czf $OUT/c109.tgz -C $OUT c109; }
python3 -m rnnbench env > $d/env.txt 2>&1
timeout 300 python3 benchmarks/plan_sweep.py $d --cases gate_split_wider --budget 280 > $d/sweep.txt 2>&1; echo "sweep rc $?" >> $d/rc.txt
python3 benchmarks/plan_ratios.py $d/plan_sweep-gate_split_wider.jsonl default backward_gate_split=True > $d/ratios.txt 2>&1
pack
timeout 240 python3 benchmarks/on_chip.py $d/ab --compare gate_split_wider --budget 220 > $d/ab.txt 2>&1; echo "ab rc $?" >> $d/rc.txt
pack
cut -c1-160 $d/ratios.txt | tail -30; tail -12 $d/ab.txt | cut -c1-230; cat $d/rc.txt
