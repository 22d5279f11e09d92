# 3xFP16 forward: kernel step times and errors against 3xTF32, the CUDA tests of strict fp32, a mutation
set -u
export RNNBENCH_GIT_COMMIT=$1
d=$OUT/c49; mkdir -p $d
PYTHONPATH=src python3 -m rnnbench env > $d/env.txt 2>&1
PYTHONPATH=src timeout 240 python3 benchmarks/results/h100/x3-anatomy/probes/split_fp16.py $d/split_fp16.jsonl > $d/split_fp16.txt 2>&1
PYTHONPATH=src timeout 240 bash ab/subset.sh $d/tests 8 "3xfp16 or splits_h_once or split_once or strict_fp32 or half_operands or split_gradients" tests/ops/test_cuda_kernels.py tests/test_cuda.py > $d/tests.txt 2>&1
rm -rf /tmp/mut && cp -r src /tmp/mut && sed -i 's|    return acc + small \* (1.0 / HALF_LO_SCALE)|    return acc + small * 0.0|' /tmp/mut/rnnbench/ops/common.py && grep -c "small \* 0.0" /tmp/mut/rnnbench/ops/common.py > $d/mutation.txt
PYTHONPATH=/tmp/mut timeout 100 python3 -m pytest -q -p no:cacheprovider tests/ops/test_cuda_kernels.py -k "3xfp16" >> $d/mutation.txt 2>&1
tar czf $OUT/c49.tgz -C $OUT c49
grep -v Warning $d/split_fp16.txt | tail -40; tail -5 $d/tests.txt; tail -4 $d/mutation.txt
