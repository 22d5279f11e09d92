# The GRU's forward in slices: the slices' CUDA tests for both cells, then the GRU kernels alone in slices against the whole tile
set -u
export PYTHONUNBUFFERED=1 RNNBENCH_GIT_COMMIT=$1 PYTHONPATH=src
d=$OUT/c122; mkdir -p $d
python3 -m rnnbench env > $d/env.txt 2>&1
timeout 130 bash scripts/cuda_tests.sh $d/tests 10 "in_slices" > $d/tests.txt 2>&1; echo "tests rc $?" >> $d/rc.txt
timeout 75 python3 benchmarks/plan_sweep.py $d/sweep --cases pieces_gru --budget 45 > $d/sweep.txt 2>&1; echo "sweep rc $?" >> $d/rc.txt
tar czf $OUT/c122.tgz -C $OUT c122
cat $d/tests.txt; grep -h "^E  \|^FAILED" $d/tests/*.log | head -5; grep "us/step" $d/sweep.txt | cut -c1-170; cat $d/rc.txt
