# after the review's mend: the CUDA tests of the split-once levels, half operands, 3xFP16 and replays
set -u
export RNNBENCH_GIT_COMMIT=$1
d=$OUT/c56; mkdir -p $d
PYTHONPATH=src python3 -m rnnbench env > $d/env.txt 2>&1
timeout 400 bash ab/subset.sh $d/tests 8 "3xfp16 or split_once or splits_h_once or half_operands or replay or strict_fp32 or rnn" tests/ops/test_cuda_kernels.py tests/test_cuda.py > $d/tests.txt 2>&1; echo "tests rc $?" >> $d/tests.txt
tar czf $OUT/c56.tgz -C $OUT c56
tail -12 $d/tests.txt
