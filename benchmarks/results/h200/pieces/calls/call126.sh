# The backward in slices' CUDA tests again (the GRU's plans mended), then the speed map for the GRU in bf16 and TF32 with its backward in slices by default
set -u
export PYTHONUNBUFFERED=1 RNNBENCH_GIT_COMMIT=$1 PYTHONPATH=src
d=$OUT/c126; mkdir -p $d
python3 -m rnnbench env > $d/env.txt 2>&1
t0=$(date +%s)
timeout 150 bash scripts/cuda_tests.sh $d/tests 12 "backward_in_slices" > $d/tests.txt 2>&1; echo "tests rc $? at $(( $(date +%s) - t0 )) s" >> $d/rc.txt
left=$(( 420 - ($(date +%s) - t0) ))
python3 benchmarks/speed_map.py $d/gru --cells gru --dtypes bf16,tf32 --batch-sizes 512,1024 --hidden-sizes 1024,2048,4096 --deadline $left > $d/map.txt 2>&1; echo "map rc $? at $(( $(date +%s) - t0 )) s" >> $d/rc.txt
tar czf $OUT/c126.tgz -C $OUT c126
tail -3 $d/tests.txt; grep -h "^FAILED\|^ERROR" $d/tests/*.log | sort -u | head; cat $d/gru/map.md 2>/dev/null | head -40; cat $d/rc.txt
