# The whole CUDA suite after the chunks fit, then coverage where not yet run (hidden 1, 37, 129; 500-650 at batch 1024)
set -u
export PYTHONUNBUFFERED=1 RNNBENCH_GIT_COMMIT=$1 PYTHONPATH=src
d=$OUT/c114; mkdir -p $d
python3 -m rnnbench env > $d/env.txt 2>&1
t0=$(date +%s)
timeout 360 bash scripts/cuda_tests.sh $d/tests 12 > $d/tests.txt 2>&1; echo "tests rc $? in $(( $(date +%s) - t0 )) s" >> $d/rc.txt
left=$(( 560 - ($(date +%s) - t0) ))
python3 benchmarks/coverage.py $d/cov-small --jobs 14 --deadline $(( left * 6 / 10 )) --hidden-sizes 129,37,1 > $d/coverage-small.txt 2>&1; echo "coverage-small rc $?" >> $d/rc.txt
left=$(( 560 - ($(date +%s) - t0) ))
python3 benchmarks/coverage.py $d/cov-1024 --jobs 14 --deadline $left --hidden-sizes 650,500 --batch-sizes 1024 > $d/coverage-1024.txt 2>&1; echo "coverage-1024 rc $?" >> $d/rc.txt
tar czf $OUT/c114.tgz -C $OUT c114
tail -12 $d/tests.txt; grep -A3 "rows failed" $d/coverage-*.txt | cut -c1-250; cat $d/rc.txt
