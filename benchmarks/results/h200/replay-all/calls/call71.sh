# whole CUDA suite at HEAD; device time of eager forwards at glample's sizes
set -u
export PYTHONUNBUFFERED=1 RNNBENCH_GIT_COMMIT=$1
d=$OUT/c71; mkdir -p $d
pack() { tar czf $OUT/c71.tgz -C $OUT c71; }
PYTHONPATH=src python3 -m rnnbench env > $d/env.txt 2>&1
PYTHONPATH=src timeout 200 python3 ab/kernels.py $d/kernels > $d/kernels.txt 2>&1; echo "kernels rc $?" >> $d/rc.txt; pack
timeout 300 bash scripts/cuda_tests.sh $d/suite 12 > $d/suite.txt 2>&1; echo "suite rc $?" >> $d/rc.txt; pack
grep -v "^      " $d/kernels.txt | cut -c1-170; tail -14 $d/suite.txt; cat $d/rc.txt
