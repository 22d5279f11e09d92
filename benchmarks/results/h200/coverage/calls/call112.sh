# Coverage sweep: the triton lane over cells x dtypes x batch 1-1024 x hidden 1-5000, verified, refusals vs failures
set -u
export PYTHONUNBUFFERED=1 RNNBENCH_GIT_COMMIT=$1 PYTHONPATH=src
d=$OUT/c112; mkdir -p $d
python3 -m rnnbench env > $d/env.txt 2>&1
python3 benchmarks/coverage.py $d/cov --jobs 14 --deadline 500 > $d/coverage.txt 2>&1; echo "coverage rc $?" >> $d/rc.txt
tar czf $OUT/c112.tgz -C $OUT c112
head -60 $d/coverage.txt | cut -c1-300; cat $d/rc.txt; ls $d/cov/*.jsonl | wc -l
