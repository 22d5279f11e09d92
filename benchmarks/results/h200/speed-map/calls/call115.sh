# The speed map (ours against cuDNN past the seeds' sizes); cuDNN's error on the TF32 hidden-1 row; strict fp32 at batch 1024, hidden 650 (split-K's give-way to the transpose plan)
set -u
export PYTHONUNBUFFERED=1 RNNBENCH_GIT_COMMIT=$1 PYTHONPATH=src
d=$OUT/c115; mkdir -p $d
python3 -m rnnbench env > $d/env.txt 2>&1
t0=$(date +%s)
python3 ab/tf32_h1_errors.py > $d/tf32_h1_errors.txt 2>&1 &
python3 benchmarks/coverage.py $d/cov-fp32-650 --jobs 2 --deadline 100 --dtypes fp32 --cells lstm,gru --hidden-sizes 650 --batch-sizes 1024 > $d/coverage-fp32-650.txt 2>&1; echo "coverage rc $? at $(( $(date +%s) - t0 )) s" >> $d/rc.txt
wait
left=$(( 565 - ($(date +%s) - t0) ))
python3 benchmarks/speed_map.py $d/map --deadline $left > $d/speed_map.txt 2>&1; echo "speed_map rc $? at $(( $(date +%s) - t0 )) s" >> $d/rc.txt
tar czf $OUT/c115.tgz -C $OUT c115
cat $d/tf32_h1_errors.txt | cut -c1-200; tail -4 $d/coverage-fp32-650.txt; head -1 $d/map/map.md; cat $d/map/warm/summary.md | tail -3; cat $d/rc.txt
