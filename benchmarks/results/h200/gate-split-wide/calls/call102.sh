# zaremba-large's backward at hidden 1500, batch 20: which plan, and is it the width?
set -u
export PYTHONUNBUFFERED=1 RNNBENCH_GIT_COMMIT=$1 PYTHONPATH=src
d=$OUT/c102; mkdir -p $d
python3 -m rnnbench env > $d/env.txt 2>&1
timeout 400 python3 benchmarks/plan_sweep.py $d --cases lm_backward --budget 360 > $d/sweep.txt 2>&1; echo "sweep rc $?" >> $d/rc.txt
tar czf $OUT/c102.tgz -C $OUT c102
cat $d/sweep.txt | cut -c1-230; cat $d/rc.txt
