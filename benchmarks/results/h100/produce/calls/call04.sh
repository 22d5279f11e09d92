# glample's hidden-100 cases (RNN, LSTM) in TF32 and fp32 with --runs 3 at this tree (as ahead/runs-26a8034's gl)
set -u
export RNNBENCH_GIT_COMMIT=$1 PYTHONUNBUFFERED=1
d=$OUT/p04; mkdir -p $d
PYTHONPATH=src python3 -m rnnbench env > $d/env.txt 2>&1
t0=$(date +%s)
L="--lanes torch-nn,torch-nn-graph,triton,triton-graph --budget 0.2 --device cuda --runs 3"
for dt in tf32 fp32; do
  PYTHONPATH=src timeout 150 python3 -m rnnbench run --cell rnn_tanh,lstm --batch-size 20 --seq-len 30 --input-size 100 \
    --hidden-size 100 --loss last_step --dtype $dt $L --out $d/gl-$dt.jsonl > $d/gl-$dt.log 2>&1
  echo "gl-$dt rc $? $(( $(date +%s) - t0 )) s" >> $d/rc.txt
  PYTHONPATH=src python3 -m rnnbench report $d/gl-$dt.jsonl --no-published --standing > $d/gl-$dt.md 2>&1
done
PYTHONPATH=src python3 -m rnnbench compare benchmarks/results/h100/ahead/runs-26a8034/gl.jsonl.gz $d/gl-tf32.jsonl > $d/gl-tf32-compare.txt 2>&1
gzip $d/*.jsonl
tar czf $OUT/p04.tgz -C $OUT p04
grep -h "| triton " $d/gl-*.md; cat $d/rc.txt
