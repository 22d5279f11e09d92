# The whole CUDA suite on the branch gate-split-576's tree (main 248c410 + the narrow rule)
set -u
export PYTHONUNBUFFERED=1 RNNBENCH_GIT_COMMIT=$1 PYTHONPATH=src
d=$OUT/c107; mkdir -p $d
python3 -m rnnbench env > $d/env.txt 2>&1
timeout 540 bash scripts/cuda_tests.sh $d/tests 12 > $d/tests.txt 2>&1; echo "tests rc $?" >> $d/rc.txt
tar czf $OUT/c107.tgz -C $OUT c107
tail -16 $d/tests.txt; cat $d/rc.txt
