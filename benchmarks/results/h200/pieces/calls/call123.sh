# The LSTM's backward in slices: the slices' CUDA tests (forward and backward), then the kernels alone
set -u
export PYTHONUNBUFFERED=1 RNNBENCH_GIT_COMMIT=$1 PYTHONPATH=src
d=$OUT/c123; mkdir -p $d
python3 -m rnnbench env > $d/env.txt 2>&1
timeout 200 bash scripts/cuda_tests.sh $d/tests 12 "in_slices" > $d/tests.txt 2>&1; echo "tests rc $?" >> $d/rc.txt
timeout 330 python3 benchmarks/plan_sweep.py $d/sweep --cases pieces_backward --budget 290 > $d/sweep.txt 2>&1; echo "sweep rc $?" >> $d/rc.txt
tar czf $OUT/c123.tgz -C $OUT c123
cat $d/tests.txt | tail -5; grep -h "^E  \|^FAILED" $d/tests/*.log | head -8; grep "us/step\|Error" $d/sweep.txt | cut -c1-175; cat $d/rc.txt
