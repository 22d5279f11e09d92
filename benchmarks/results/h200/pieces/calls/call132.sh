# Where a large training step's device time goes (ours vs cuDNN), and the backward at 128 rows at more shapes + TF32 GRU forward at 128 rows (kernels alone)
set -u
export PYTHONUNBUFFERED=1 RNNBENCH_GIT_COMMIT=$1 PYTHONPATH=src
d=$OUT/c132; mkdir -p $d
python3 -m rnnbench env > $d/env.txt 2>&1
t0=$(date +%s)
timeout 200 python3 benchmarks/results/h200/train-parts/probes/kernels.py $d/parts > $d/parts.txt 2>&1; echo "parts rc $? at $(( $(date +%s) - t0 )) s" >> $d/rc.txt
left=$(( 540 - ($(date +%s) - t0) ))
timeout $left python3 benchmarks/plan_sweep.py $d/back --cases wide_rows_backward_more --budget $(( left - 15 )) > $d/back.txt 2>&1; echo "back rc $? at $(( $(date +%s) - t0 )) s" >> $d/rc.txt
tar czf $OUT/c132.tgz -C $OUT c132
grep -v "^ *[0-9.]* us  " $d/parts.txt | head -20; grep -h "us/step\|Error" $d/back.txt | cut -c1-200; cat $d/rc.txt
