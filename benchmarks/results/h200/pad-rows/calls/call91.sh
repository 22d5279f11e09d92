# The split-K backward's padded partials by default at 64 batch rows (331bb1d): the whole CUDA suite, the engine at hidden 650 (TF32, bf16)
set -u
export PYTHONUNBUFFERED=1 RNNBENCH_GIT_COMMIT=$1
d=$OUT/c91; mkdir -p $d
pack() { tar czf $OUT/c91.tgz -C $OUT c91; }
PYTHONPATH=src python3 -m rnnbench env > $d/env.txt 2>&1
timeout 310 bash scripts/cuda_tests.sh $d/suite 12 > $d/suite.txt 2>&1; echo "suite rc $?" >> $d/rc.txt; pack
t0=$(date +%s)
PYTHONPATH=src timeout 110 python3 -m rnnbench run --cell lstm,gru --batch-size 20,128 --seq-len 35 --input-size 650 --hidden-size 650 \
  --loss all_steps --dtype tf32,bf16 --lanes torch-nn,torch-nn-graph,triton,triton-graph --budget 0.15 --device cuda --out $d/h650.jsonl > $d/h650.log 2>&1
echo "h650 rc $? $(( $(date +%s) - t0 )) s" >> $d/rc.txt
PYTHONPATH=src python3 -m rnnbench report $d/h650.jsonl --no-published > $d/h650.md 2>&1; gzip -f $d/h650.jsonl; pack
tail -14 $d/suite.txt; grep "^###\|triton \|torch-nn " $d/h650.md | cut -c1-150; cat $d/rc.txt
