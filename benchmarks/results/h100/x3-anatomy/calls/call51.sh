# 3xFP16 with the RNN's tanh: its kernel step against 3xTF32; the whole CUDA suite
set -u
export RNNBENCH_GIT_COMMIT=$1
d=$OUT/c51; mkdir -p $d
PYTHONPATH=src python3 -m rnnbench env > $d/env.txt 2>&1
PYTHONPATH=src timeout 120 python3 benchmarks/results/h100/x3-anatomy/probes/split_fp16.py $d/split_fp16_rnn.jsonl rnn_tanh > $d/split_fp16_rnn.txt 2>&1
timeout 420 bash scripts/cuda_tests.sh $d/cuda 8 > $d/cuda.txt 2>&1; echo "cuda rc $?" >> $d/cuda.txt
tar czf $OUT/c51.tgz -C $OUT c51
grep -v Warning $d/split_fp16_rnn.txt | tail -12; tail -15 $d/cuda.txt
