# after the RNN's mend: its CUDA tests and the 3xfp16 ones; glample's strict fp32 cases (the RNN's tanh now 3xFP16) and theano's
set -u
export RNNBENCH_GIT_COMMIT=$1
d=$OUT/c52; mkdir -p $d
PYTHONPATH=src python3 -m rnnbench env > $d/env.txt 2>&1
timeout 300 bash ab/subset.sh $d/tests 8 "rnn or 3xfp16 or on_chip or split_once" tests/ops/test_cuda_kernels.py tests/test_cuda.py > $d/tests.txt 2>&1; echo "tests rc $?" >> $d/tests.txt
PYTHONPATH=src timeout 150 python3 -m rnnbench run --suite glample-2016 --dtype fp32 --lanes torch-nn,triton --budget 0.2 \
  --device cuda --out $d/gl.jsonl > $d/gl.log 2>&1
PYTHONPATH=src timeout 200 python3 -m rnnbench run --cell lstm,gru --batch-size 32,128 --seq-len 30 --input-size hidden \
  --hidden-size 128,512,1024 --dtype fp32 --lanes torch-nn,triton --budget 0.2 --device cuda --out $d/th.jsonl > $d/th.log 2>&1
for n in th gl; do PYTHONPATH=src python3 -m rnnbench report $d/$n.jsonl --no-published --standing > $d/$n.md 2>&1; done
tar czf $OUT/c52.tgz -C $OUT c52
tail -n 12 $d/tests.txt; grep -A8 "^| cell" $d/gl.md | grep -v "^--"
