# The auto rule's CUDA test (mended: strict fp32 stays ours, errors on RuntimeWarning alone), with the module tests that pass nn._launch
set -u
export PYTHONUNBUFFERED=1 RNNBENCH_GIT_COMMIT=$1 PYTHONPATH=src
d=$OUT/c118; mkdir -p $d
python3 -m rnnbench env > $d/env.txt 2>&1
t0=$(date +%s)
timeout 400 bash scripts/cuda_tests.sh $d/tests 12 "auto_runs_cudnn or an_eager_forward_is_replayed or module" > $d/tests.txt 2>&1; echo "tests rc $? at $(( $(date +%s) - t0 )) s" >> $d/rc.txt
tar czf $OUT/c118.tgz -C $OUT c118
tail -16 $d/tests.txt; cat $d/rc.txt
