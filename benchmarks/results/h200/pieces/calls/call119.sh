# The LSTM forward in slices (Plan.pieces): its CUDA tests, the kernels alone against the whole tile (plan_sweep --cases pieces), then the engine's speed map (triton, now in slices by default, beside torch-nn) at the LSTM's large batch x hidden
set -u
export PYTHONUNBUFFERED=1 RNNBENCH_GIT_COMMIT=$1 PYTHONPATH=src
d=$OUT/c119; mkdir -p $d
python3 -m rnnbench env > $d/env.txt 2>&1
t0=$(date +%s)
timeout 150 bash scripts/cuda_tests.sh $d/tests 8 "in_slices" > $d/tests.txt 2>&1; echo "tests rc $? at $(( $(date +%s) - t0 )) s" >> $d/rc.txt
timeout 240 python3 benchmarks/plan_sweep.py $d/sweep --cases pieces --budget 200 > $d/sweep.txt 2>&1; echo "sweep rc $? at $(( $(date +%s) - t0 )) s" >> $d/rc.txt
left=$(( 560 - ($(date +%s) - t0) ))
python3 benchmarks/speed_map.py $d/lstm-16bit --cells lstm --dtypes bf16,fp16 --batch-sizes 256,512,1024 --hidden-sizes 1024,2048,4096 --deadline $left > $d/map.txt 2>&1; echo "map rc $? at $(( $(date +%s) - t0 )) s" >> $d/rc.txt
tar czf $OUT/c119.tgz -C $OUT c119
tail -4 $d/tests.txt; grep -h "^FAILED" $d/tests/*.log | head; cat $d/sweep.txt | cut -c1-170; cat $d/lstm-16bit/map.md 2>/dev/null | head -40; tail -3 $d/lstm-16bit/map.log; cat $d/rc.txt
