# the lone timing test, and the TF32 cases with --runs 3 at this tree (as runs-26a8034)
set -u
export RNNBENCH_GIT_COMMIT=$1
d=$OUT/c33; mkdir -p $d
PYTHONPATH=src python3 -m rnnbench env > $d/env.txt 2>&1
timeout 100 python3 -m pytest -q -p no:cacheprovider -m "cuda and alone" tests > $d/alone.log 2>&1; echo "alone rc $?" >> $d/alone.log
t0=$(date +%s)
L="--lanes torch-nn,torch-nn-graph,triton,triton-graph --budget 0.2 --device cuda --runs 3"
th="--cell lstm,gru --batch-size 32,128 --seq-len 30 --input-size hidden --hidden-size 128 --dtype tf32"
gl="--cell rnn_tanh,lstm --batch-size 20 --seq-len 30 --input-size 100 --hidden-size 100 --loss last_step --dtype tf32"
for s in th gl; do
  PYTHONPATH=src timeout 200 python3 -m rnnbench run ${!s} $L --out $d/$s.jsonl > $d/$s.log 2>&1
  PYTHONPATH=src python3 -m rnnbench report $d/$s.jsonl --no-published --standing > $d/$s.md 2>&1
  echo "$s $(( $(date +%s) - t0 )) s"
done
for s in th gl; do
  PYTHONPATH=src python3 -m rnnbench compare benchmarks/results/h100/ahead/runs-26a8034/$s.jsonl.gz $d/$s.jsonl > $d/$s-compare.txt 2>&1
done
gzip $d/*.jsonl
tar czf $OUT/c33.tgz -C $OUT c33
tail -n 2 $d/alone.log; grep -h "| triton " $d/th.md $d/gl.md
