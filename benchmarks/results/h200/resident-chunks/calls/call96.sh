# The resident forward's chunk width where it spills (plan_sweep --cases resident_chunks): bf16 and TF32 at hidden 1500 and 650
set -u
export PYTHONUNBUFFERED=1 RNNBENCH_GIT_COMMIT=$1
d=$OUT/c96; mkdir -p $d
pack() { tar czf $OUT/c96.tgz -C $OUT c96; }
PYTHONPATH=src python3 -m rnnbench env > $d/env.txt 2>&1
timeout 330 python3 benchmarks/plan_sweep.py $d/sweep --cases resident_chunks --budget 300 > $d/sweep.txt 2>&1; echo "sweep rc $?" >> $d/rc.txt; pack
grep -v "^{" $d/sweep.txt | cut -c1-200 | tail -40; cat $d/rc.txt
