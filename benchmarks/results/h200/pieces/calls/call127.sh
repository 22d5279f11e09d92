# TF32's forward in slices on its own operands against its fp16-operand default (kernels alone)
set -u
export PYTHONUNBUFFERED=1 RNNBENCH_GIT_COMMIT=$1 PYTHONPATH=src
d=$OUT/c127; mkdir -p $d
python3 -m rnnbench env > $d/env.txt 2>&1
timeout 200 python3 benchmarks/plan_sweep.py $d/sweep --cases pieces_tf32 --budget 170 > $d/sweep.txt 2>&1; echo "sweep rc $?" >> $d/rc.txt
tar czf $OUT/c127.tgz -C $OUT c127
grep "us/step\|Error" $d/sweep.txt | cut -c1-175; cat $d/rc.txt
