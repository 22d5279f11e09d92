# after the review's mend: the split products' CUDA tests, and the projection's capture ignored (on a copy)
set -u
export RNNBENCH_GIT_COMMIT=$1
d=$OUT/c64; mkdir -p $d
PYTHONPATH=src python3 -m rnnbench env > $d/env.txt 2>&1
rm -rf /tmp/mut && mkdir -p /tmp/mut && cp -r src tests pyproject.toml /tmp/mut/
sed -i 's/splits_pay(flop, capturing(x)):/splits_pay(flop, False):/' /tmp/mut/src/rnnbench/ops/projection.py
cmp -s src/rnnbench/ops/projection.py /tmp/mut/src/rnnbench/ops/projection.py && echo "NOT APPLIED" > $d/mutation.txt
(cd /tmp/mut && timeout 200 python3 -m pytest -q -p no:cacheprovider tests/ops/test_cuda_kernels.py -k "whole_tiles_is_ours or projection_from_split" 2>&1 | tail -3 | sed "s/^/capture ignored: /") >> $d/mutation.txt &
timeout 300 bash ab/subset.sh $d/tests 7 "split_gradients or projection or strict_fp32 or fp32s_tolerance or captured_gradients" tests/ops/test_cuda_kernels.py tests/test_cuda.py > $d/tests.txt 2>&1; echo "tests rc $?" >> $d/tests.txt
wait
cp $d/tests/ids $d/test-ids.txt
tar czf $OUT/c64.tgz -C $OUT c64
cat $d/tests.txt $d/mutation.txt
