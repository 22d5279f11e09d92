# Plan.input_first: the forward kernels alone (plan_sweep), then the engine's A/B in turns (on_chip)
set -u
export PYTHONUNBUFFERED=1 RNNBENCH_GIT_COMMIT=$1 PYTHONPATH=src
d=$OUT/c148; mkdir -p $d
pack() { tar czf $OUT/c148.tgz -C $OUT c148; }
python3 -m rnnbench env > $d/env.txt 2>&1
t0=$(date +%s)
timeout 250 python3 benchmarks/plan_sweep.py $d/sweep --cases input_first --budget 230 > $d/sweep.txt 2>&1
echo "sweep rc $? $(( $(date +%s) - t0 )) s" >> $d/rc.txt; pack
t0=$(date +%s)
timeout 300 python3 benchmarks/on_chip.py $d/ab --compare input_first --case-budget 0.3 --budget 280 > $d/ab.txt 2>&1
echo "ab rc $? $(( $(date +%s) - t0 )) s" >> $d/rc.txt; pack
cut -c1-200 $d/sweep.txt | grep -v "^{" ; tail -n 25 $d/ab.txt; cat $d/rc.txt
