# bits base vs new; outputs made ahead in one process (probe); graphed forwards base/new alternated x3
set -u
export RNNBENCH_GIT_COMMIT=$1
d=$OUT/c24; mkdir -p $d
PYTHONPATH=src python3 -m rnnbench env > $d/env.txt 2>&1
t0=$(date +%s)
PYTHONPATH=ab/base/src timeout 220 python3 ab/bits.py $d/bits-base.pt > $d/bits-base.txt 2>&1 &
PYTHONPATH=src timeout 220 python3 ab/bits.py $d/bits-new.pt > $d/bits-new.txt 2>&1 &
wait
python3 ab/cmpbits.py $d/bits-base.pt $d/bits-new.pt > $d/bits.txt 2>&1; rm -f $d/*.pt
echo "bits $(( $(date +%s) - t0 )) s"; cat $d/bits.txt
PYTHONPATH=src timeout 240 python3 benchmarks/results/h100/ahead/probes/ahead.py $d/ahead.jsonl > $d/ahead.txt 2>&1
echo "probe $(( $(date +%s) - t0 )) s"
L="--lanes torch-nn-graph,triton-graph --budget 0.2 --device cuda --mode forward"
th="--cell lstm,gru --batch-size 32,128 --seq-len 30 --input-size hidden --hidden-size 128 --dtype tf32,bf16"
for r in 3 4 5; do for tree in base new; do
  src=src; c=$RNNBENCH_GIT_COMMIT; [ $tree = base ] && src=ab/base/src && c=$2
  RNNBENCH_GIT_COMMIT=$c PYTHONPATH=$src timeout 60 python3 -m rnnbench run $th $L --out $d/th-$tree-$r.jsonl > $d/th-$tree-$r.log 2>&1
done; done
echo "graphs $(( $(date +%s) - t0 )) s"
python3 ab/ms.py $d th > $d/th-ms.txt 2>&1
gzip $d/*.jsonl
tar czf $OUT/c24.tgz -C $OUT c24
cat $d/ahead.txt; cat $d/th-ms.txt
