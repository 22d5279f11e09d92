# final tree: the replay/train/graph CUDA subset (incl. take_back) after the review mend
set -u
export PYTHONUNBUFFERED=1 RNNBENCH_GIT_COMMIT=$1
d=$OUT/c69; mkdir -p $d
PYTHONPATH=src python3 -m rnnbench env > $d/env.txt 2>&1
timeout 200 bash ab/subset.sh $d/tests 12 "replay or train or take_back or graph or launch" tests > $d/tests.txt 2>&1; echo "tests rc $?" >> $d/tests.txt
tar czf $OUT/c69.tgz -C $OUT c69
tail -16 $d/tests.txt
