# The whole CUDA suite at the final plans (128-row forward, TF32 slices), the speed map (LSTM TF32), the backward at 128 rows explored (kernels alone)
set -u
export PYTHONUNBUFFERED=1 RNNBENCH_GIT_COMMIT=$1 PYTHONPATH=src
d=$OUT/c131; mkdir -p $d
python3 -m rnnbench env > $d/env.txt 2>&1
t0=$(date +%s)
timeout 330 bash scripts/cuda_tests.sh $d/tests 14 > $d/tests.txt 2>&1; echo "tests rc $? at $(( $(date +%s) - t0 )) s" >> $d/rc.txt
timeout 85 python3 benchmarks/plan_sweep.py $d/back --cases wide_rows_backward --budget 75 > $d/back.txt 2>&1; echo "back rc $? at $(( $(date +%s) - t0 )) s" >> $d/rc.txt
left=$(( 555 - ($(date +%s) - t0) ))
python3 benchmarks/speed_map.py $d/tf32 --cells lstm --dtypes tf32 --batch-sizes 512,1024 --hidden-sizes 1024,2048,4096 --deadline $left > $d/map.txt 2>&1; echo "map rc $? at $(( $(date +%s) - t0 )) s" >> $d/rc.txt
tar czf $OUT/c131.tgz -C $OUT c131
tail -4 $d/tests.txt; grep -h "^FAILED\|^ERROR" $d/tests/*.log | sort -u | head; grep -h "us/step\|Error" $d/back.txt | cut -c1-190; cat $d/tf32/map.md 2>/dev/null | head -20; cat $d/rc.txt
