# the strict fp32 cases at the split gradients: theano's depth-1 and glample's, torch-nn and triton
set -u
export RNNBENCH_GIT_COMMIT=$1
d=$OUT/c45; mkdir -p $d
PYTHONPATH=src python3 -m rnnbench env > $d/env.txt 2>&1
PYTHONPATH=src timeout 330 python3 -m rnnbench run --cell lstm,gru --batch-size 32,128 --seq-len 30 --input-size hidden \
  --hidden-size 128,512,1024 --dtype fp32 --lanes torch-nn,triton --budget 0.2 --device cuda --out $d/th.jsonl > $d/th.log 2>&1
PYTHONPATH=src timeout 150 python3 -m rnnbench run --suite glample-2016 --dtype fp32 --lanes torch-nn,triton --budget 0.2 \
  --device cuda --out $d/gl.jsonl > $d/gl.log 2>&1
for n in th gl; do PYTHONPATH=src python3 -m rnnbench report $d/$n.jsonl --no-published --standing > $d/$n.md 2>&1; done
tar czf $OUT/c45.tgz -C $OUT c45
tail -n 3 $d/th.log $d/gl.log
