# The LSTM's backward in slices by default: the whole CUDA suite, then the speed map (LSTM bf16, batch 512, 1024 x hidden 1024-4096: torch-nn beside triton, every row verified)
set -u
export PYTHONUNBUFFERED=1 RNNBENCH_GIT_COMMIT=$1 PYTHONPATH=src
d=$OUT/c124; mkdir -p $d
python3 -m rnnbench env > $d/env.txt 2>&1
t0=$(date +%s)
timeout 345 bash scripts/cuda_tests.sh $d/tests 12 > $d/tests.txt 2>&1; echo "tests rc $? at $(( $(date +%s) - t0 )) s" >> $d/rc.txt
left=$(( 575 - ($(date +%s) - t0) ))
python3 benchmarks/speed_map.py $d/bf16 --cells lstm --dtypes bf16 --batch-sizes 512,1024 --hidden-sizes 1024,2048,4096 --deadline $left > $d/map.txt 2>&1; echo "map rc $? at $(( $(date +%s) - t0 )) s" >> $d/rc.txt
tar czf $OUT/c124.tgz -C $OUT c124
tail -4 $d/tests.txt; grep -h "^FAILED\|^ERROR" $d/tests/*.log | sort -u | head; cat $d/bf16/map.md 2>/dev/null | head -24; tail -2 $d/bf16/map.log; cat $d/rc.txt
