# 3xFP16: the mutation (small products dropped) on a copy of the tree; the strict fp32 cases, torch-nn and triton
set -u
export RNNBENCH_GIT_COMMIT=$1
d=$OUT/c50; mkdir -p $d
PYTHONPATH=src python3 -m rnnbench env > $d/env.txt 2>&1
rm -rf /tmp/mutrepo && mkdir /tmp/mutrepo && cp -r src tests pyproject.toml /tmp/mutrepo/
sed -i 's|    return acc + small \* (1.0 / HALF_LO_SCALE)|    return acc + small * 0.0|' /tmp/mutrepo/src/rnnbench/ops/common.py
grep -c "small \* 0.0" /tmp/mutrepo/src/rnnbench/ops/common.py > $d/mutation.txt
(cd /tmp/mutrepo && timeout 100 python3 -m pytest -q -p no:cacheprovider tests/ops/test_cuda_kernels.py -k "3xfp16" 2>&1 | tail -15) >> $d/mutation.txt
PYTHONPATH=src timeout 330 python3 -m rnnbench run --cell lstm,gru --batch-size 32,128 --seq-len 30 --input-size hidden \
  --hidden-size 128,512,1024 --dtype fp32 --lanes torch-nn,triton --budget 0.2 --device cuda --out $d/th.jsonl > $d/th.log 2>&1
PYTHONPATH=src timeout 150 python3 -m rnnbench run --suite glample-2016 --dtype fp32 --lanes torch-nn,triton --budget 0.2 \
  --device cuda --out $d/gl.jsonl > $d/gl.log 2>&1
for n in th gl; do PYTHONPATH=src python3 -m rnnbench report $d/$n.jsonl --no-published --standing > $d/$n.md 2>&1; done
tar czf $OUT/c50.tgz -C $OUT c50
tail -n 4 $d/mutation.txt; tail -n 3 $d/th.log $d/gl.log
