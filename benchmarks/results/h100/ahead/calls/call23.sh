# A/B: parts of k as lanes (a shuffle, not shared memory) + outputs allocated ahead, base = HEAD
set -u
export RNNBENCH_GIT_COMMIT=$1
d=$OUT/c23; mkdir -p $d
PYTHONPATH=src python3 -m rnnbench env > $d/env.txt 2>&1
t0=$(date +%s)
for tree in base new; do
  src=src; [ $tree = base ] && src=ab/base/src
  PYTHONPATH=$src timeout 120 python3 ab/bits.py $d/bits-$tree.pt > $d/bits-$tree.txt 2>&1
done
python3 ab/cmpbits.py $d/bits-base.pt $d/bits-new.pt > $d/bits.txt 2>&1; rm -f $d/*.pt
echo "bits $(( $(date +%s) - t0 )) s"
L="--lanes torch-nn,torch-nn-graph,triton,triton-graph --budget 0.2 --device cuda"
th="--cell lstm,gru --batch-size 32,128 --seq-len 30 --input-size hidden --hidden-size 128 --dtype tf32,bf16"
gl="--cell rnn_tanh,lstm,gru --batch-size 20 --seq-len 30 --input-size 100 --hidden-size 100 --loss last_step --dtype tf32"
for r in 1 2; do for tree in base new; do
  src=src; c=$RNNBENCH_GIT_COMMIT; [ $tree = base ] && src=ab/base/src && c=$2
  for s in th gl; do
    RNNBENCH_GIT_COMMIT=$c PYTHONPATH=$src timeout 150 python3 -m rnnbench run ${!s} $L --out $d/$s-$tree-$r.jsonl > $d/$s-$tree-$r.log 2>&1
  done
  echo "$tree $r $(( $(date +%s) - t0 )) s"
done; done
for s in th gl; do for r in 1 2; do
  python3 benchmarks/results/h100/gated-fma/probes/ratios.py $d/$s-base-$r.jsonl $d/$s-new-$r.jsonl > $d/$s-ratios-$r.txt 2>&1
done; done
for s in th gl; do python3 ab/ms.py $d $s > $d/$s-ms.txt 2>&1; done
gzip $d/*.jsonl
tar czf $OUT/c23.tgz -C $OUT c23
cat $d/bits.txt; cat $d/th-ms.txt $d/gl-ms.txt
