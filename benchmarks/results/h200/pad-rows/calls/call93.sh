# The 16-bit forward's padded rows by default where hidden is not a multiple of 8 (4533d92, branch pad-16bit): the whole CUDA suite, the rule's unmeasured shapes, the engine at hidden 650 and glample's
set -u
export PYTHONUNBUFFERED=1 RNNBENCH_GIT_COMMIT=$1
d=$OUT/c93; mkdir -p $d
pack() { tar czf $OUT/c93.tgz -C $OUT c93; }
PYTHONPATH=src python3 -m rnnbench env > $d/env.txt 2>&1
timeout 330 bash scripts/cuda_tests.sh $d/suite 12 > $d/suite.txt 2>&1; echo "suite rc $?" >> $d/rc.txt; pack
timeout 95 python3 benchmarks/plan_sweep.py $d/sweep --cases pad_rows_16bit_rule --budget 80 > $d/sweep.txt 2>&1; echo "sweep rc $?" >> $d/rc.txt; pack
t0=$(date +%s)
PYTHONPATH=src timeout 100 python3 -m rnnbench run --cell lstm,gru --batch-size 20,128 --seq-len 35 --input-size 650 --hidden-size 650 \
  --loss all_steps --dtype bf16,fp16 --lanes torch-nn,torch-nn-graph,triton,triton-graph --budget 0.15 --device cuda --out $d/h650.jsonl > $d/h650.log 2>&1
echo "h650 rc $? $(( $(date +%s) - t0 )) s" >> $d/rc.txt
PYTHONPATH=src python3 -m rnnbench report $d/h650.jsonl --no-published > $d/h650.md 2>&1; gzip -f $d/h650.jsonl; pack
tail -14 $d/suite.txt; grep -v "^{" $d/sweep.txt | cut -c1-200 | tail -32; grep "^###\|triton \|torch-nn " $d/h650.md | cut -c1-150; cat $d/rc.txt
