# 128 batch rows a program by default (plans.wide_rows_default): the slices' and wide rows' CUDA tests, the kernels alone against the 64-row plan before, the speed map (LSTM and GRU bf16)
set -u
export PYTHONUNBUFFERED=1 RNNBENCH_GIT_COMMIT=$1 PYTHONPATH=src
d=$OUT/c130; mkdir -p $d
python3 -m rnnbench env > $d/env.txt 2>&1
t0=$(date +%s)
timeout 170 bash scripts/cuda_tests.sh $d/tests 12 "slices or wide_rows or auto_runs_cudnn" > $d/tests.txt 2>&1; echo "tests rc $? at $(( $(date +%s) - t0 )) s" >> $d/rc.txt
timeout 190 python3 benchmarks/plan_sweep.py $d/sweep --cases wide_rows --budget 170 > $d/sweep.txt 2>&1; echo "sweep rc $? at $(( $(date +%s) - t0 )) s" >> $d/rc.txt
left=$(( 565 - ($(date +%s) - t0) ))
python3 benchmarks/speed_map.py $d/bf16 --cells lstm,gru --dtypes bf16 --batch-sizes 512,1024 --hidden-sizes 1024,2048,4096 --deadline $left > $d/map.txt 2>&1; echo "map rc $? at $(( $(date +%s) - t0 )) s" >> $d/rc.txt
tar czf $OUT/c130.tgz -C $OUT c130
tail -3 $d/tests.txt; grep -h "^FAILED\|^ERROR" $d/tests/*.log | sort -u | head; grep -h "us/step\|Error" $d/sweep.txt | cut -c1-150; cat $d/bf16/map.md 2>/dev/null | head -34; cat $d/rc.txt
