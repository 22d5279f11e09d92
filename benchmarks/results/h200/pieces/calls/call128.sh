# TF32's LSTM forward on its own operands in 2 slices by default: the slices' CUDA tests, the kernels alone against the plan before, 128 rows a program (bf16, exploring), the speed map (LSTM TF32)
set -u
export PYTHONUNBUFFERED=1 RNNBENCH_GIT_COMMIT=$1 PYTHONPATH=src
d=$OUT/c128; mkdir -p $d
python3 -m rnnbench env > $d/env.txt 2>&1
t0=$(date +%s)
timeout 170 bash scripts/cuda_tests.sh $d/tests 12 "slices" > $d/tests.txt 2>&1; echo "tests rc $? at $(( $(date +%s) - t0 )) s" >> $d/rc.txt
timeout 130 python3 benchmarks/plan_sweep.py $d/sweep --cases pieces_tf32_rule --budget 110 > $d/sweep.txt 2>&1; echo "sweep rc $? at $(( $(date +%s) - t0 )) s" >> $d/rc.txt
timeout 70 python3 benchmarks/plan_sweep.py $d/rows --cases pieces_rows --budget 55 > $d/rows.txt 2>&1; echo "rows rc $? at $(( $(date +%s) - t0 )) s" >> $d/rc.txt
left=$(( 570 - ($(date +%s) - t0) ))
python3 benchmarks/speed_map.py $d/tf32 --cells lstm --dtypes tf32 --batch-sizes 512,1024 --hidden-sizes 1024,2048,4096 --deadline $left > $d/map.txt 2>&1; echo "map rc $? at $(( $(date +%s) - t0 )) s" >> $d/rc.txt
tar czf $OUT/c128.tgz -C $OUT c128
tail -3 $d/tests.txt; grep -h "^FAILED\|^ERROR" $d/tests/*.log | sort -u | head; grep -h "us/step\|Error" $d/sweep.txt $d/rows.txt | cut -c1-175; cat $d/tf32/map.md 2>/dev/null | head -20; cat $d/rc.txt
