# The sliced forward's CUDA tests again after its row indices went int64 (and the launch tests beside)
set -u
export PYTHONUNBUFFERED=1 RNNBENCH_GIT_COMMIT=$1 PYTHONPATH=src
d=$OUT/c121; mkdir -p $d
python3 -m rnnbench env > $d/env.txt 2>&1
timeout 200 bash scripts/cuda_tests.sh $d/tests 8 "in_slices or auto_runs_cudnn" > $d/tests.txt 2>&1; echo "tests rc $?" >> $d/rc.txt
tar czf $OUT/c121.tgz -C $OUT c121
cat $d/tests.txt; cat $d/rc.txt
timeout 100 python3 benchmarks/plan_sweep.py $d/sweep --cases pieces --budget 60 > $d/sweep.txt 2>&1; echo "sweep rc $?" >> $d/rc.txt
tar czf $OUT/c121.tgz -C $OUT c121
grep "us/step" $d/sweep.txt | cut -c1-170; cat $d/rc.txt
