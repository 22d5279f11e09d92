# Coverage again after the chunks fit (0bf186a): hidden 500-5000, every cell, dtype and batch 1-1024
set -u
export PYTHONUNBUFFERED=1 RNNBENCH_GIT_COMMIT=$1 PYTHONPATH=src
d=$OUT/c113; mkdir -p $d
python3 -m rnnbench env > $d/env.txt 2>&1
python3 benchmarks/coverage.py $d/cov --jobs 14 --deadline 480 --hidden-sizes 5000,4096,3000,2560,1500,1000,650,500 > $d/coverage.txt 2>&1; echo "coverage rc $?" >> $d/rc.txt
tar czf $OUT/c113.tgz -C $OUT c113
head -40 $d/coverage.txt | cut -c1-250; cat $d/rc.txt
