# odd widths at a language model's batch; glample's hidden-100 TF32 rows over three processes (standing at HEAD)
set -u
export PYTHONUNBUFFERED=1 RNNBENCH_GIT_COMMIT=$1
d=$OUT/c85; mkdir -p $d
pack() { tar czf $OUT/c85.tgz -C $OUT c85; }
PYTHONPATH=src python3 -m rnnbench env > $d/env.txt 2>&1
timeout 130 python3 benchmarks/plan_sweep.py $d/odd --cases odd_widths_lm --budget 120 > $d/odd.txt 2>&1; echo "odd rc $?" >> $d/rc.txt; pack
t0=$(date +%s)
PYTHONPATH=src timeout 230 python3 -m rnnbench run --cell rnn_tanh,lstm --batch-size 20 --seq-len 30 --input-size 100 --hidden-size 100 \
  --loss last_step --dtype tf32 --lanes torch-nn,torch-nn-graph,triton,triton-graph --budget 0.2 --runs 3 --device cuda --out $d/glample.jsonl > $d/glample.log 2>&1
echo "glample rc $? $(( $(date +%s) - t0 )) s" >> $d/rc.txt
PYTHONPATH=src python3 -m rnnbench report $d/glample.jsonl --no-published > $d/glample.md 2>&1; gzip -f $d/glample.jsonl; pack
grep -v "^{" $d/odd.txt | cut -c1-200; grep "triton \|torch-nn " $d/glample.md | cut -c1-160; cat $d/rc.txt
