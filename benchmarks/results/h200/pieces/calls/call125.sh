# The GRU's backward in slices: the whole CUDA suite, then the GRU's kernels alone (default = slices, against one slice asked: the plan before)
set -u
export PYTHONUNBUFFERED=1 RNNBENCH_GIT_COMMIT=$1 PYTHONPATH=src
d=$OUT/c125; mkdir -p $d
python3 -m rnnbench env > $d/env.txt 2>&1
t0=$(date +%s)
timeout 350 bash scripts/cuda_tests.sh $d/tests 12 > $d/tests.txt 2>&1; echo "tests rc $? at $(( $(date +%s) - t0 )) s" >> $d/rc.txt
left=$(( 560 - ($(date +%s) - t0) ))
timeout $left python3 benchmarks/plan_sweep.py $d/sweep --cases pieces_backward_gru --budget $(( left - 25 )) > $d/sweep.txt 2>&1; echo "sweep rc $? at $(( $(date +%s) - t0 )) s" >> $d/rc.txt
tar czf $OUT/c125.tgz -C $OUT c125
tail -3 $d/tests.txt; grep -h "^FAILED\|^ERROR" $d/tests/*.log | sort -u | head; grep "us/step\|Error" $d/sweep.txt | cut -c1-175; cat $d/rc.txt
