# session 13 first call: whole CUDA suite at HEAD, and where a replayed call's host time goes
set -u
export RNNBENCH_GIT_COMMIT=$1
d=$OUT/c65; mkdir -p $d
PYTHONPATH=src python3 -m rnnbench env > $d/env.txt 2>&1
PYTHONPATH=src timeout 150 python3 ab/parts.py $d/parts > $d/parts.txt 2>&1; echo "parts rc $?" >> $d/parts.txt
timeout 400 bash scripts/cuda_tests.sh $d/suite 12 > $d/suite.txt 2>&1; echo "suite rc $?" >> $d/suite.txt
tar czf $OUT/c65.tgz -C $OUT c65
cat $d/parts.txt; cat $d/suite.txt
