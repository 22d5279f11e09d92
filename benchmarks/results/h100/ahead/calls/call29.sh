# the replay CUDA tests at this tree (Replay.build mended after the whole suite at 26a8034)
set -u
export RNNBENCH_GIT_COMMIT=$1
d=$OUT/c29; mkdir -p $d
PYTHONPATH=src python3 -m rnnbench env > $d/env.txt 2>&1
timeout 420 python3 -m pytest -q -p no:cacheprovider -n 0 tests/ops/test_cuda_kernels.py -k "replay" > $d/replay-tests.txt 2>&1 || timeout 420 python3 -m pytest -q -p no:cacheprovider tests/ops/test_cuda_kernels.py -k "replay" > $d/replay-tests.txt 2>&1
tar czf $OUT/c29.tgz -C $OUT c29
tail -n 3 $d/replay-tests.txt; grep "^FAILED" $d/replay-tests.txt | head
