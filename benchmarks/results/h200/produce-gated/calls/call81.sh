# 88c5f3b's projection change (make_cublas): the CUDA tests of the projection, graphs and captures at HEAD
set -u
export PYTHONUNBUFFERED=1 RNNBENCH_GIT_COMMIT=$1
d=$OUT/c81; mkdir -p $d
pack() { tar czf $OUT/c81.tgz -C $OUT c81; }
PYTHONPATH=src python3 -m rnnbench env > $d/env.txt 2>&1
timeout 170 bash ab/subset.sh $d/tests 12 "projection or capture or graph or cublas" tests > $d/tests.txt 2>&1; echo "tests rc $?" >> $d/rc.txt; pack
tail -14 $d/tests.txt | cut -c1-250; cat $d/rc.txt
